import type { AdminRoute } from '../router.js';
import { adminError, json } from '../http.js';
import type { Gateway } from '../../gateway.js';
import { PROMPTS, promptByName } from './prompts.js';

/**
 * Admin API companions of the MCP endpoint (docs/mcp.md#admin-api), Basic
 * auth like the rest of `/api`, answered whether MCP is enabled or not:
 * `GET /api/mcp/status` (never a token), `GET /api/mcp/prompts` and
 * `GET /api/mcp/prompts/:name?<argument>=…` (the rendered prompt text, for a
 * human to paste into an agent).
 */
export function mcpAdminRoutes(gateway: Gateway): AdminRoute[] {
  return [
    {
      method: 'GET',
      path: '/api/mcp/status',
      auth: true,
      handler: () => {
        const mcp = gateway.system.admin?.mcp;
        const scopes = [...new Set((mcp?.tokens ?? []).map((t) => t.scope ?? 'read'))].sort();
        return json(200, {
          compiled: true,
          enabled: mcp?.enabled === true,
          path: mcp?.path ?? '/mcp',
          token_count: mcp?.tokens.length ?? 0,
          scopes,
          transports: ['streamable-http', 'stdio'],
        });
      },
    },
    {
      method: 'GET',
      path: '/api/mcp/prompts',
      auth: true,
      handler: () =>
        json(200, {
          prompts: PROMPTS.map(({ name, description, arguments: args }) => ({
            name,
            description,
            arguments: args,
          })),
        }),
    },
    {
      method: 'GET',
      path: '/api/mcp/prompts/:name',
      auth: true,
      handler: ({ params, query }) => {
        const prompt = promptByName(params.name ?? '');
        if (prompt === undefined) throw adminError('not_found');
        const args: Record<string, string> = {};
        for (const a of prompt.arguments) {
          const value = query.get(a.name);
          if (value !== null && value.trim() !== '') args[a.name] = value;
        }
        const missing = prompt.arguments.filter((a) => a.required && args[a.name] === undefined);
        if (missing.length > 0)
          throw adminError('invalid_input', {
            message: `prompt '${prompt.name}' needs ${missing.map((a) => a.name).join(', ')}`,
          });
        return json(200, { name: prompt.name, description: prompt.description, text: prompt.render(args) });
      },
    },
  ];
}
