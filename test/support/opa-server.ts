import { startFakeService, type FakeService } from './fake-service.js';

/** A policy: the `input` document in, the decision document (`result`) out; `undefined` = undefined document. */
export type OpaPolicy = (input: Record<string, unknown>) => unknown;

export interface OpaServer extends FakeService {
  /** Decision documents by path (`e2e/allow` for `POST /v1/data/e2e/allow`). */
  readonly policies: Map<string, OpaPolicy>;
}

/**
 * Open Policy Agent's Data API as it answers decision queries:
 * `POST /v1/data/<path>` with `{"input": …}` → `200 {"result": …}`, or `200 {}`
 * when the path names no document; a body that is not JSON → `400
 * {"code":"invalid_parameter"}`.
 */
export async function startOpaServer(policies: Record<string, OpaPolicy> = {}): Promise<OpaServer> {
  const table = new Map(Object.entries(policies));
  const service = await startFakeService({
    'POST /v1/data/*': (call) => {
      if (call.json === undefined) {
        return {
          status: 400,
          json: { code: 'invalid_parameter', message: 'body contains malformed input document' },
        };
      }
      const input = call.json['input'];
      const policy = table.get(call.path.slice('/v1/data/'.length));
      const result = policy?.((input ?? {}) as Record<string, unknown>);
      return { status: 200, json: result === undefined ? {} : { result } };
    },
  });
  return Object.assign(service, { policies: table });
}
