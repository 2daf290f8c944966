// A vitest reporter that prints, after the run, each test file's time (its tests and hooks, and its import) by tier,
// slowest first: CI's log then says where the suite's time goes (vitest.config.ts adds it under CI=true).
import type { Reporter, TestModule } from 'vitest/node';

export default class FileDurations implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const rows = modules.map((m) => {
      const d = m.diagnostic();
      return { tier: m.project.name, file: m.relativeModuleId, s: (d.duration + d.collectDuration) / 1000, state: m.state() };
    });
    rows.sort((a, b) => b.s - a.s);
    const lines = ['', 'seconds per test file (tests, hooks and import), slowest first:'];
    for (const tier of [...new Set(rows.map((r) => r.tier))]) {
      const own = rows.filter((r) => r.tier === tier);
      lines.push(`  ${tier}: ${own.length} files, ${own.reduce((a, r) => a + r.s, 0).toFixed(1)} s in all`);
      for (const r of own) lines.push(`    ${r.s.toFixed(1).padStart(7)}  ${r.file}${r.state === 'passed' ? '' : ` (${r.state})`}`);
    }
    console.log(lines.join('\n'));
  }
}
