import { NodeError } from '../../core/errors.js';
import { ConfigError, definePlugin } from '../../core/plugin.js';

/** Structural check only (a selection set, balanced braces); the GraphQL server parses for real. */
function checkQuery(query: string): string | undefined {
  if (query.trim() === '') return 'must not be blank';
  let depth = 0;
  for (const ch of query) {
    if (ch === '{') depth++;
    else if (ch === '}' && --depth < 0) return 'has unbalanced braces';
  }
  if (depth !== 0) return 'has unbalanced braces';
  if (!query.includes('{')) return 'has no selection set';
  return undefined;
}

/** Turns a REST call into a GraphQL POST: the configured query, variables from query parameters and JSON body. */
export const degraphql = definePlugin({
  type: 'degraphql',
  category: 'core',
  description:
    'Turn a REST call into a GraphQL POST to the upstream: a fixed query with variables taken from query parameters or the JSON body.',
  schema: {
    type: 'object',
    additionalProperties: false,
    required: ['query'],
    properties: {
      query: { type: 'string', minLength: 1, maxLength: 1024, description: 'The GraphQL document.' },
      variables: {
        type: 'array',
        minItems: 1,
        items: { type: 'string', minLength: 1 },
        description: 'Variable names, read from query parameters first, then from the JSON body.',
      },
      operation_name: {
        type: 'string',
        minLength: 1,
        maxLength: 1024,
        description: 'Sent as operationName.',
      },
    },
  },
  outputs: { success: { kind: 'success' } },
  create(config) {
    const problem = checkQuery(config.query);
    if (problem !== undefined) throw new ConfigError('query', problem);
    const variables = config.variables ?? [];
    const base: Record<string, unknown> = { query: config.query };
    if (config.operation_name !== undefined) base.operationName = config.operation_name;
    const fixedBody = variables.length === 0 ? Buffer.from(JSON.stringify(base)) : null;
    return {
      run(ctx) {
        const req = ctx.request;
        if (req.method !== 'GET' && req.method !== 'POST') {
          throw new NodeError('METHOD_NOT_ALLOWED', `degraphql accepts GET and POST, got ${req.method}`);
        }
        let body = fixedBody;
        if (body === null) {
          const values: Record<string, unknown> = {};
          let json: Record<string, unknown> | undefined;
          for (const name of variables) {
            const fromQuery = req.query.get(name)?.[0];
            if (fromQuery !== undefined) {
              values[name] = fromQuery;
              continue;
            }
            json ??= parseBody(req.body);
            if (Object.hasOwn(json, name)) values[name] = json[name];
          }
          body = Buffer.from(JSON.stringify({ ...base, variables: values }));
        }
        req.method = 'POST';
        req.body = body;
        req.headers['content-type'] = 'application/json';
        delete req.headers['content-length'];
        delete req.headers['content-encoding'];
        return 'success';
      },
    };
  },
});

function parseBody(body: Buffer | null): Record<string, unknown> {
  if (body === null || body.length === 0) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch (err) {
    throw new NodeError(
      'INVALID_REQUEST_BODY',
      `request body can't be decoded as JSON: ${(err as Error).message}`,
    );
  }
  return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
    ? (parsed as Record<string, unknown>)
    : {};
}
