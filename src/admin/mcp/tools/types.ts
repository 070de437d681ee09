import type { Reply } from '../../http.js';
import type { AdminMethod } from '../../router.js';
import type { Redaction } from '../../../debug/redaction.js';
import type { Gateway } from '../../../gateway.js';
import type { Logger } from '../../../core/logger.js';
import type { McpPrincipal, McpScope } from '../auth.js';

/** A JSON Schema object describing a tool's arguments (what tools/list advertises). */
export interface InputSchema {
  type: 'object';
  properties?: Record<string, object>;
  required?: string[];
  additionalProperties?: boolean;
  [key: string]: unknown;
}

/** What every tool may use; built per MCP request. */
export interface ToolContext {
  gateway: Gateway;
  principal: McpPrincipal;
  logger: Logger;
  /** Masks secrets in config shown to the agent (the debug redaction's key rule). */
  redaction: Redaction;
  /** Runs one Admin API operation from its dispatch table, in process (no HTTP, no Basic auth). */
  admin(method: AdminMethod, path: string): Promise<Reply>;
}

export type ToolArgs = Record<string, unknown>;

export interface ToolDef {
  name: string;
  scope: McpScope;
  /** Written for an agent: when to use the tool and what it returns. */
  description: string;
  inputSchema: InputSchema;
  run(args: ToolArgs, ctx: ToolContext): unknown;
}

export const NO_ARGS: InputSchema = { type: 'object', properties: {}, additionalProperties: false };

export const NAME_ARG: InputSchema = {
  type: 'object',
  properties: { name: { type: 'string', minLength: 1, description: 'Resource name.' } },
  required: ['name'],
  additionalProperties: false,
};
