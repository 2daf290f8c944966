#!/usr/bin/env node
// edgecv command line. `edgecv [serve] [flags]` runs the HTTPS server; more subcommands slot into COMMANDS.

import { BENCH_USAGE, runBenchCommand } from './commands/bench.js';
import { CONSOLE_USAGE } from './console/usage.js';
import { LOGIN_USAGE, LOGOUT_USAGE, runLogin, runLogout } from './commands/login.js';
import { METRICS_USAGE, runMetrics } from './commands/metrics.js';
import { runTrainer, TRAINER_USAGE } from './commands/trainer.js';
import { runUserCommand, USER_USAGE } from './commands/user.js';
import { ConfigError, parseServerConfig, serverOptionsHelp } from './config.js';

interface Command {
  summary: string;
  usage: () => string;
  /** Resolves with the exit code. */
  run: (args: string[]) => Promise<number>;
}

const COMMANDS: Record<string, Command> = {
  serve: {
    summary: 'run the HTTPS server (the default)',
    usage: () => `usage: edgecv serve [flags]\n\nflags (environment variable in brackets):\n${serverOptionsHelp()}`,
    run: async (args) => {
      const config = parseServerConfig(args);
      const { runServe } = await import('./server/serve.js');
      return runServe(config);
    },
  },
  console: {
    summary: 'run the fleet console: login and metrics of every instance of a region, from InfluxDB',
    usage: () => CONSOLE_USAGE,
    run: async (args) => (await import('./console/command.js')).runConsole(args),
  },
  user: {
    summary: 'add, remove or list the users who may log in (user add|remove|list)',
    usage: () => USER_USAGE,
    run: runUserCommand,
  },
  login: {
    summary: 'log in to a server and save the token',
    usage: () => LOGIN_USAGE,
    run: runLogin,
  },
  logout: {
    summary: 'forget the saved token of a server',
    usage: () => LOGOUT_USAGE,
    run: runLogout,
  },
  trainer: {
    summary: 'import a JSON-lines gallery file into a server, resumably, with progress (trainer import)',
    usage: () => TRAINER_USAGE,
    run: runTrainer,
  },
  metrics: {
    summary: "query a server's application metrics (metrics app)",
    usage: () => METRICS_USAGE,
    run: runMetrics,
  },
  bench: {
    summary: 'measure a server from outside: round trip, server time, latency, FPS (REST or WebSocket)',
    usage: () => BENCH_USAGE,
    run: runBenchCommand,
  },
};

function mainUsage(): string {
  const cmds = Object.entries(COMMANDS)
    .map(([name, c]) => `  ${name.padEnd(12)} ${c.summary}`)
    .join('\n');
  return `usage: edgecv <command> [flags]\n\ncommands:\n${cmds}\n\n'edgecv <command> --help' describes a command's flags.`;
}

export async function main(argv: string[]): Promise<number> {
  let [name, ...rest] = argv;
  if (name === undefined || name.startsWith('-')) {
    if (name === '--help' || name === '-h') {
      console.log(mainUsage());
      return 0;
    }
    rest = argv;
    name = 'serve';
  }
  if (name === 'help') {
    const cmd = rest[0] ? COMMANDS[rest[0]] : undefined;
    console.log(cmd ? cmd.usage() : mainUsage());
    return 0;
  }
  const cmd = COMMANDS[name];
  if (!cmd) {
    console.error(`edgecv: unknown command '${name}'\n\n${mainUsage()}`);
    return 2;
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    console.log(cmd.usage());
    return 0;
  }
  try {
    return await cmd.run(rest);
  } catch (e) {
    if (e instanceof ConfigError) {
      console.error(`edgecv ${name}: ${e.message}\n\n${cmd.usage()}`);
      return 2;
    }
    throw e;
  }
}

process.exitCode = await main(process.argv.slice(2));
