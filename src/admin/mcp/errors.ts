import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { AdminError } from '../http.js';
import { ConfigRejected, type ConfigIssue } from '../../config/schema-validate.js';
import { SandboxError } from '../../debug/sandbox.js';
import { EtcdConflict } from '../../config/etcd-source.js';
import { ConfigSourceReadOnly } from '../../kubernetes/errors.js';

/** The codes an agent can branch on (docs/mcp.md); wording of messages is not API. */
export type ToolErrorCode =
  | 'not_found'
  | 'invalid_input'
  | 'invalid_config'
  | 'debug_disabled'
  | 'sandbox_disabled'
  | 'forbidden'
  | 'store_error'
  | 'internal'
  | 'unsaved_changes';

/**
 * A domain failure of a tool. It reaches the agent as a tool result with
 * `isError: true` and the JSON body `{code, message, errors?, hint?}`, never
 * as a JSON-RPC error, so the agent can read it and correct itself.
 */
export class ToolError extends Error {
  constructor(
    readonly code: ToolErrorCode,
    message: string,
    readonly errors: string[] = [],
    readonly hint?: string,
  ) {
    super(message);
    this.name = 'ToolError';
  }

  toJSON(): Record<string, unknown> {
    return {
      code: this.code,
      message: this.message,
      ...(this.errors.length > 0 ? { errors: this.errors } : {}),
      ...(this.hint === undefined ? {} : { hint: this.hint }),
    };
  }
}

/** Problems located by config path read best as `path: message`. */
export const issueLines = (issues: readonly ConfigIssue[]): string[] =>
  issues.map((i) => (i.path === '' ? i.message : `${i.path}: ${i.message}`));

export const notFound = (what: string, name: string): ToolError =>
  new ToolError('not_found', `${what} '${name}' does not exist`);

export const invalidInput = (message: string, hint?: string): ToolError =>
  new ToolError('invalid_input', message, [], hint);

export const invalidConfig = (issues: readonly ConfigIssue[], message?: string): ToolError =>
  new ToolError(
    'invalid_config',
    message ?? 'the resulting configuration was rejected; nothing was changed',
    issueLines(issues),
    'Every success and outcome port must be wired. get_node_type(<type>) lists a node type’s ports and config keys.',
  );

export const debugDisabled = (): ToolError =>
  new ToolError(
    'debug_disabled',
    'debug mode is off: traces and the sandbox are unavailable',
    [],
    'set debug.enabled: true in system.yaml and restart the gateway',
  );

export const sandboxDisabled = (): ToolError =>
  new ToolError(
    'sandbox_disabled',
    'the sandbox is disabled',
    [],
    'set debug.sandbox: true (with debug.enabled: true) in system.yaml and restart the gateway',
  );

export const forbidden = (tool: string): ToolError =>
  new ToolError(
    'forbidden',
    `'${tool}' needs scope write (it changes configuration or executes nodes) and this token has scope read`,
    [],
    'write tools (changes, validation, the sandbox) need a token with scope write; return the proposed YAML for a human to apply instead',
  );

/** A successful tool result: text as is, anything else as pretty JSON text. */
export function okResult(value: unknown): CallToolResult {
  const text = typeof value === 'string' ? value : JSON.stringify(value, null, 2);
  return { content: [{ type: 'text', text }] };
}

export function errorResult(error: ToolError): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: JSON.stringify(error.toJSON()) }] };
}

/**
 * Maps what the shared admin operations throw onto tool errors. `writing`
 * marks a config write, where any other failure comes from persisting the
 * change (gateway.yaml or the config store), hence `store_error`.
 */
export function toToolError(err: unknown, writing = false): ToolError {
  if (err instanceof ToolError) return err;
  if (err instanceof ConfigRejected) return invalidConfig(err.issues);
  if (err instanceof AdminError) return fromAdminError(err);
  if (err instanceof SandboxError) return fromSandboxError(err);
  if (err instanceof ConfigSourceReadOnly)
    return new ToolError('forbidden', err.message, [], `change the ${err.source} objects instead`);
  if (err instanceof EtcdConflict)
    return new ToolError('store_error', err.message, [], 'read the resource again and retry the change');
  const message = err instanceof Error ? err.message : String(err);
  return new ToolError(writing ? 'store_error' : 'internal', message);
}

function fromAdminError(err: AdminError): ToolError {
  const body = err.body;
  const text = typeof body['message'] === 'string' ? body['message'] : err.message;
  const details = Array.isArray(body['details']) ? (body['details'] as ConfigIssue[]) : undefined;
  if (err.status === 404) return new ToolError('not_found', text === 'not_found' ? 'not found' : text);
  if (err.status === 409 && Array.isArray(body['referrers'])) {
    return new ToolError(
      'invalid_config',
      `${err.message}: ${(body['referrers'] as string[]).join(', ')}`,
      details === undefined ? [] : issueLines(details),
      'remove or repoint the referrers first',
    );
  }
  if (details !== undefined) return invalidConfig(details, err.message);
  if (err.status === 502) return new ToolError('store_error', text);
  if (err.status < 500) return invalidInput(text);
  return new ToolError('internal', text);
}

const SANDBOX_HINT =
  'run_sandbox takes exactly one of "policy" (a stored policy name) or "nodes" ([{"id", "type", "config"}]), an optional "on_error" ("stop" or "client") and a flat "context": {"method", "path", "host", "headers": {...}, "query_params": {...}, "body", "message": {...}, "response": {"status_code", "headers", "body"}} and optional "upstreams": {"<node id>": {"status", "headers", "body"}}.';

function fromSandboxError(err: SandboxError): ToolError {
  const text = typeof err.body['message'] === 'string' ? err.body['message'] : err.message;
  if (err.status === 404) return new ToolError('not_found', text);
  if (err.status === 504) return new ToolError('internal', text);
  const details = err.body['details'];
  return new ToolError(
    'invalid_input',
    text,
    Array.isArray(details) ? issueLines(details as ConfigIssue[]) : [],
    SANDBOX_HINT,
  );
}
