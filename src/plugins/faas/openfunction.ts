import { definePlugin, type PluginEnv } from '../../core/plugin.js';
import { CalloutErrors } from './callout.js';
import { calloutProperties, FUNCTION_OUTPUTS, warnIgnoredKeepalive, type CalloutConfig } from './config.js';
import { FunctionUri } from './endpoint.js';
import { ForwardingNode, noAuth, replaceHeaderAuth } from './forwarding-node.js';

export interface OpenFunctionConfig extends CalloutConfig {
  function_uri: string;
  authorization?: { service_token?: string };
}

/** Forwards the request to an OpenFunction endpoint (optional Basic token) and relays its reply. */
export const openfunction = definePlugin({
  type: 'openfunction',
  category: 'faas',
  description:
    'Invoke an OpenFunction function with the client request (optional Basic service token); the reply becomes the response.',
  schema: {
    type: 'object',
    additionalProperties: false,
    required: ['function_uri'],
    properties: {
      function_uri: {
        type: 'string',
        minLength: 1,
        description: 'Function URL. Templated; keep it static or env-driven (SSRF guidance).',
      },
      authorization: {
        type: 'object',
        additionalProperties: false,
        properties: {
          service_token: {
            type: 'string',
            minLength: 1,
            description: '`user:password`, sent as Authorization: Basic base64(service_token).',
          },
        },
      },
      ...calloutProperties(true),
    },
  },
  outputs: FUNCTION_OUTPUTS,
  templated: ['function_uri'],
  create(config: OpenFunctionConfig, env: PluginEnv): ForwardingNode {
    warnIgnoredKeepalive(config, env);
    const errors = new CalloutErrors('openfunction', 'OPENFUNCTION_CALLOUT_ERROR');
    const options = { sslVerify: config.ssl_verify, timeoutMs: config.timeout };
    const uri = new FunctionUri(config.function_uri, 'function_uri', env, options, errors);
    const token = config.authorization?.service_token;
    const auth =
      token === undefined
        ? noAuth
        : replaceHeaderAuth('authorization', `Basic ${Buffer.from(token, 'utf8').toString('base64')}`);
    return new ForwardingNode(uri, errors, config.timeout, auth);
  },
});
