import { readFileSync } from 'node:fs';
import { ConfigRejected, validateAgainst, yamlSyntaxIssue } from './schema-validate.js';
import { parseYamlData } from './yaml-data.js';

/**
 * Policy tests (docs/config-as-code.md#policy-tests): the `tests:` section of gateway.yaml, or
 * files with a top-level `tests:` list, run by `switchyard test` and `switchyard validate`. The
 * running gateway ignores them.
 */
export interface PolicyTest {
  name: string;
  request: {
    method?: string;
    path: string;
    headers?: Record<string, string>;
    /** A string is sent as it is; anything else as JSON (with `content-type: application/json`). */
    body?: unknown;
  };
  /** Node id → the answer that node gives instead of calling out. */
  upstreams?: Record<string, MockAnswer>;
  expect: PolicyTestExpect;
}

export interface MockAnswer {
  status: number;
  headers?: Record<string, string>;
  body?: string;
}

export interface PolicyTestExpect {
  status?: number;
  /** The ports taken after the listener (`node.port`), a prefix of the actual list. */
  ports?: string[];
  /** The exact list of ports (a list), or `true` to make `ports` exact. */
  ports_exact?: string[] | boolean;
  /** Header name → its value, or null for a header that must be absent. */
  headers?: Record<string, string | null>;
  body?: string;
  body_contains?: string;
  /** A JSON subset of the response body: every key given must be there with that value. */
  json?: unknown;
  /** `message` keys as the last node left them. */
  message?: Record<string, unknown>;
}

const str = { type: 'string' } as const;

const mockSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['status'],
  properties: {
    status: { type: 'integer', minimum: 100, maximum: 599 },
    headers: { type: 'object', additionalProperties: str },
    body: str,
  },
} as const;

/** One entry of `tests:`. */
export const policyTestSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'request', 'expect'],
  properties: {
    name: { type: 'string', minLength: 1 },
    request: {
      type: 'object',
      additionalProperties: false,
      required: ['path'],
      properties: {
        method: { type: 'string', minLength: 1, default: 'GET' },
        path: { type: 'string', pattern: '^/' },
        headers: { type: 'object', additionalProperties: str },
        body: {},
      },
    },
    upstreams: { type: 'object', additionalProperties: mockSchema },
    expect: {
      type: 'object',
      additionalProperties: false,
      properties: {
        status: { type: 'integer', minimum: 100, maximum: 599 },
        ports: { type: 'array', items: str },
        ports_exact: { anyOf: [{ type: 'boolean' }, { type: 'array', items: str }] },
        headers: { type: 'object', additionalProperties: { type: ['string', 'null'] } },
        body: str,
        body_contains: str,
        json: {},
        message: { type: 'object' },
      },
    },
  },
} as const;

/** The `tests:` key of gateway.yaml: optional, never defaulted (a config without tests dumps without it). */
export const policyTestsSchema = { type: 'array', items: policyTestSchema } as const;

/** Reads a file of policy tests (a mapping with a `tests:` list); throws ConfigRejected. */
export function loadPolicyTests(path: string): PolicyTest[] {
  let raw: unknown;
  try {
    raw = parseYamlData(readFileSync(path, 'utf8')) ?? {};
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== undefined)
      throw new ConfigRejected([{ path: '', message: `cannot read ${path}: ${(err as Error).message}` }]);
    throw new ConfigRejected([yamlSyntaxIssue(err)]);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw) || !('tests' in raw))
    throw new ConfigRejected([{ path: '', message: 'a test file is a mapping with a `tests:` list' }]);
  const schema = {
    type: 'object',
    additionalProperties: false,
    required: ['tests'],
    properties: { tests: policyTestsSchema },
  };
  const issues = validateAgainst(schema, raw, '');
  if (issues.length > 0) throw new ConfigRejected(issues);
  return (raw as { tests: PolicyTest[] }).tests;
}
