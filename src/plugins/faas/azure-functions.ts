import { definePlugin, type PluginEnv } from '../../core/plugin.js';
import { CalloutErrors } from './callout.js';
import { calloutProperties, FUNCTION_OUTPUTS, warnIgnoredKeepalive, type CalloutConfig } from './config.js';
import { FunctionUri } from './endpoint.js';
import { ForwardingNode, headerAuth } from './forwarding-node.js';

export interface AzureFunctionsConfig extends CalloutConfig {
  function_uri: string;
  authorization?: { apikey?: string; clientid?: string };
}

const KEY_HEADERS = ['x-functions-key', 'x-functions-clientid'] as const;

/** Forwards the request to an Azure Function (function key headers) and relays its reply. */
export const azureFunctions = definePlugin({
  type: 'azure-functions',
  category: 'faas',
  description:
    'Invoke an Azure Function with the client request (x-functions-key / x-functions-clientid); the reply becomes the response.',
  schema: {
    type: 'object',
    additionalProperties: false,
    required: ['function_uri'],
    properties: {
      function_uri: {
        type: 'string',
        minLength: 1,
        description: 'Function URL; its own query (code=…) is kept. Templated; keep it static or env-driven.',
      },
      authorization: {
        type: 'object',
        additionalProperties: false,
        properties: {
          apikey: { type: 'string', minLength: 1, description: 'Sent as header x-functions-key.' },
          clientid: { type: 'string', minLength: 1, description: 'Sent as header x-functions-clientid.' },
        },
      },
      ...calloutProperties(true),
    },
  },
  outputs: FUNCTION_OUTPUTS,
  templated: ['function_uri'],
  create(config: AzureFunctionsConfig, env: PluginEnv): ForwardingNode {
    warnIgnoredKeepalive(config, env);
    const errors = new CalloutErrors('azure-functions', 'AZURE_FUNCTIONS_CALLOUT_ERROR');
    const options = { sslVerify: config.ssl_verify, timeoutMs: config.timeout };
    const uri = new FunctionUri(config.function_uri, 'function_uri', env, options, errors);
    const { apikey, clientid } = config.authorization ?? {};
    const pairs: string[] = [];
    if (apikey !== undefined) pairs.push(KEY_HEADERS[0], apikey);
    if (clientid !== undefined) pairs.push(KEY_HEADERS[1], clientid);
    return new ForwardingNode(uri, errors, config.timeout, headerAuth(pairs, KEY_HEADERS));
  },
});
