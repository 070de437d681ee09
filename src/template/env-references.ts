import { interpolateEnv } from '../config/interpolate.js';
import { compileTemplate } from './compile.js';

/**
 * Every environment read that `text` would make if it were a node config
 * value: `${NAME}` / `${NAME:-default}` (config interpolation) and
 * `{{env.NAME}}` (templates), in that order, as written forms such as
 * `${ADMIN_PASSWORD}` and `{{env.HOME}}`. Both passes run the real parsers
 * against an environment that records lookups and holds nothing, so the
 * answer follows their grammar exactly (`{{${X:-env}.HOME}}` reports `${X}`).
 */
export function environmentReferences(text: string): string[] {
  return references(text).map((r) => r.form);
}

/** The variable names behind `environmentReferences`, without duplicates. */
export function environmentVariableNames(text: string): string[] {
  return [...new Set(references(text).map((r) => r.name))];
}

function references(text: string): { form: string; name: string }[] {
  if (!text.includes('${') && !text.includes('{{')) return [];
  const found: { form: string; name: string }[] = [];
  const interpolated = interpolateEnv(
    text,
    recordingEnv((name) => found.push({ form: `\${${name}}`, name })),
    true,
  );
  compileTemplate(interpolated, {
    env: recordingEnv((name) => found.push({ form: `{{env.${name}}}`, name })),
  });
  return found;
}

/** An empty environment that reports each name it is asked for. */
function recordingEnv(seen: (name: string) => void): NodeJS.ProcessEnv {
  return new Proxy(
    {},
    {
      get(_target, name) {
        if (typeof name === 'string') seen(name);
        return undefined;
      },
      has: () => false,
    },
  );
}
