import { yamlLibrary } from '../config/yaml-data.js';
import { maskSecrets } from './mcp/secrets.js';
import { adminErrorReply, type Reply } from './http.js';

/** What a `viewer` account gets for any write (docs/admin-api.md#roles). */
export const VIEWER_READ_ONLY: Reply = adminErrorReply('forbidden', {
  message: 'this account has role viewer: it may read, not write',
});

/**
 * A reply as a viewer may see it: secrets masked by the same rules as MCP read
 * tokens (key names, configured header values, URL credentials), in JSON
 * bodies and in YAML exports alike.
 */
export function maskedForViewer(reply: Reply): Reply {
  if (reply.body === undefined || reply.status >= 300) return reply;
  if (reply.contentType === undefined) return { ...reply, body: maskSecrets(reply.body) };
  if (/yaml/i.test(reply.contentType) && typeof reply.body === 'string') {
    const yaml = yamlLibrary();
    return { ...reply, body: yaml.stringify(maskSecrets(yaml.parse(reply.body) as unknown)) };
  }
  return reply;
}
