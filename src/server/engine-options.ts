// The engine options a server config asks for: each option's row in the table (src/config.ts) names the
// Engine.open() option it sets, so `edgecv serve` turns its options into engine options by reading the table.
// An option left out of the config stays out here too, so the engine's default holds.

import { SERVER_OPTIONS, type OptionSpec, type ServerConfig } from '../config.js';
import type { EngineOptions } from '../engine/types.js';

export function engineOptionsFromConfig(config: ServerConfig): EngineOptions {
  const options: Record<string, unknown> = {};
  for (const [key, spec] of Object.entries(SERVER_OPTIONS) as [keyof ServerConfig, OptionSpec][]) {
    const value = config[key];
    if (spec.engine === null || value === undefined) continue;
    const mapping = typeof spec.engine === 'string' ? { option: spec.engine } : spec.engine;
    options[mapping.option] = mapping.value ? mapping.value(String(value)) : value;
  }
  return options as EngineOptions;
}
