/**
 * The `GET /api/env-vars` payload: every environment variable name visible to
 * the process, sorted ascending. Values never leave this function.
 */
export function listEnvVarNames(env: NodeJS.ProcessEnv = process.env): { names: string[] } {
  const names = Object.keys(env).filter((name) => env[name] !== undefined);
  names.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return { names };
}
