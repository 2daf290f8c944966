// Command-line options of the bench entry points: `--name value` pairs.

/** The value after `name` in `args`, or undefined when `name` is absent. */
export function argValue(args: readonly string[], name: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
}
