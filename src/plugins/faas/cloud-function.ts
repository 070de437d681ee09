import type { RequestPart } from '../../core/context.js';
import type { KnownErrorCode } from '../../core/errors.js';
import { SigV4Signer, type Pair, type SigV4HeaderNames } from '../../signing/sigv4.js';
import { ConfigError, definePlugin, type PluginDefinition, type PluginEnv } from '../../core/plugin.js';
import { CalloutErrors } from './callout.js';
import { calloutProperties, FUNCTION_OUTPUTS, warnIgnoredKeepalive, type CalloutConfig } from './config.js';
import { FunctionUri, type Endpoint } from './endpoint.js';
import { ForwardingNode, headerAuth, noAuth, type CalloutAuth } from './forwarding-node.js';

export interface CloudFunctionConfig extends CalloutConfig {
  function_uri: string;
  authorization?: {
    apikey?: string;
    iam?: {
      accesskey: string;
      secretkey: string;
      aws_region: string;
      aws_service: string;
      session_token?: string;
    };
  };
}

const schema = {
  type: 'object',
  additionalProperties: false,
  required: ['function_uri'],
  properties: {
    function_uri: {
      type: 'string',
      minLength: 1,
      description: 'Function URL or API endpoint. Templated; keep it static or env-driven (SSRF guidance).',
    },
    authorization: {
      type: 'object',
      additionalProperties: false,
      description: 'At most one of apikey or iam; omit for an unauthenticated call.',
      properties: {
        apikey: { type: 'string', minLength: 1, description: 'Sent as header x-api-key; no signing.' },
        iam: {
          type: 'object',
          additionalProperties: false,
          required: ['accesskey', 'secretkey'],
          description: 'Sign each request with the version-4 HMAC-SHA256 scheme.',
          properties: {
            accesskey: { type: 'string', minLength: 1, description: 'Access key id.' },
            secretkey: { type: 'string', minLength: 1, description: 'Secret access key.' },
            aws_region: {
              type: 'string',
              minLength: 1,
              default: 'us-east-1',
              description: 'Signing region.',
            },
            aws_service: {
              type: 'string',
              minLength: 1,
              default: 'lambda',
              description: 'Signing service name.',
            },
            session_token: {
              type: 'string',
              description: 'Temporary token; sent and signed when non-empty.',
            },
          },
        },
      },
    },
    ...calloutProperties(true),
  },
};

/**
 * One implementation, two spellings (docs/reference-compatibility.md): `cloud-function` signs with
 * neutral header names, `aws-lambda` with the provider's own so it
 * works against the real service. Each reports failures under its own code.
 */
function functionPlugin(
  type: string,
  code: KnownErrorCode,
  headerNames: SigV4HeaderNames,
): PluginDefinition<CloudFunctionConfig, 'success'> {
  return definePlugin({
    type,
    category: 'faas',
    description: `Invoke a serverless function through its function URL or API endpoint (x-api-key, or version-4 signing with ${headerNames.date}); the reply becomes the response.`,
    schema,
    outputs: FUNCTION_OUTPUTS,
    templated: ['function_uri'],
    create(config: CloudFunctionConfig, env: PluginEnv): ForwardingNode {
      const { apikey, iam } = config.authorization ?? {};
      if (apikey !== undefined && iam !== undefined) {
        throw new ConfigError('authorization', 'set either apikey or iam, not both');
      }
      warnIgnoredKeepalive(config, env);
      const errors = new CalloutErrors(type, code);
      const options = { sslVerify: config.ssl_verify, timeoutMs: config.timeout };
      const uri = new FunctionUri(config.function_uri, 'function_uri', env, options, errors);
      let auth: CalloutAuth = noAuth;
      if (apikey !== undefined) auth = headerAuth(['x-api-key', apikey], ['x-api-key']);
      else if (iam !== undefined) {
        const signer = new SigV4Signer({
          headerNames,
          accessKey: iam.accesskey,
          secretKey: iam.secretkey,
          sessionToken: iam.session_token === '' ? undefined : iam.session_token,
          region: iam.aws_region,
          service: iam.aws_service,
        });
        auth = new SignedAuth(signer, headerNames);
      }
      return new ForwardingNode(uri, errors, config.timeout, auth);
    },
  });
}

export const cloudFunction = functionPlugin('cloud-function', 'CLOUD_FUNCTION_CALLOUT_ERROR', {
  date: 'x-cloud-date',
  securityToken: 'x-cloud-security-token',
});

export const awsLambda = functionPlugin('aws-lambda', 'CLOUD_FUNCTION_CALLOUT_ERROR', {
  date: 'x-amz-date',
  securityToken: 'x-amz-security-token',
});

/**
 * Signs `host`, the date header and (when configured) the token header; every
 * other forwarded header goes unsigned (docs/plugins/cloud-function.md). The client's own
 * Authorization, date and token headers are replaced.
 */
class SignedAuth implements CalloutAuth {
  readonly omit: ReadonlySet<string>;
  readonly #signer: SigV4Signer;

  constructor(signer: SigV4Signer, names: SigV4HeaderNames) {
    this.#signer = signer;
    this.omit = new Set(['authorization', names.date, names.securityToken]);
  }

  prepare(headers: string[], req: RequestPart, endpoint: Endpoint): string {
    const signed = this.#signer.sign({
      method: req.method,
      path: endpoint.path,
      query: queryPairs(endpoint.query, req.query),
      headers: [['host', endpoint.authority]],
      payload: req.body,
    });
    for (const item of signed.headers) headers.push(item);
    // The canonical form goes on the wire, so the receiver rebuilds exactly the query that was signed.
    const query = signed.canonicalQuery;
    return query === '' ? endpoint.path : `${endpoint.path}?${query}`;
  }
}

/** The endpoint URI's query parameters followed by the client's, decoded. */
function queryPairs(uriQuery: string, client: Map<string, string[]>): Pair[] {
  const pairs: Pair[] = [];
  if (uriQuery !== '') for (const pair of new URLSearchParams(uriQuery)) pairs.push(pair);
  for (const [name, values] of client) for (const value of values) pairs.push([name, value]);
  return pairs;
}
