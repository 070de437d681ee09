import type { CoreV1Api } from '@kubernetes/client-node';
import { SecretError, type SecretManager } from './manager.js';
import type { KubernetesManagerConfig } from './schema.js';

/**
 * Kubernetes Secrets (docs/secrets.md#kubernetes): `${secret:kubernetes:NAMESPACE/NAME#KEY}` is
 * the base64-decoded `data[KEY]` of the Secret (`GET /api/v1/namespaces/NAMESPACE/secrets/NAME`),
 * read with the kubeconfig the Gateway API source uses (src/kubernetes/source.ts
 * `loadKubeConfig`: `kubeconfig`, in-cluster credentials, $KUBECONFIG, ~/.kube/config).
 */
export class KubernetesSecretManager implements SecretManager {
  readonly type = 'kubernetes';
  readonly refreshMs: number;
  readonly #config: KubernetesManagerConfig;
  readonly #env: NodeJS.ProcessEnv;
  /** The client is loaded on first use: a gateway without this manager never pays its import. */
  #api: Promise<CoreV1Api> | undefined;

  constructor(config: KubernetesManagerConfig, env: NodeJS.ProcessEnv) {
    this.#config = config;
    this.#env = env;
    this.refreshMs = config.refresh_s * 1000;
  }

  async load(path: string): Promise<Record<string, string>> {
    const parts = path.split('/');
    const [namespace, name] = parts;
    if (parts.length !== 2 || !namespace || !name)
      throw new SecretError(`kubernetes: ${path} is not NAMESPACE/NAME`);
    const api = await this.#client();
    let secret: { data?: Record<string, string>; stringData?: Record<string, string> };
    let timer: NodeJS.Timeout | undefined;
    try {
      secret = await Promise.race([
        api.readNamespacedSecret({ name, namespace }),
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new SecretError(`kubernetes: no answer within ${this.#config.timeout_ms} ms`)),
            this.#config.timeout_ms,
          );
        }),
      ]);
    } catch (err) {
      if (err instanceof SecretError) throw err;
      // Not the client's message: it carries the whole answer body.
      const code = (err as { code?: unknown }).code;
      if (code === 404) throw new SecretError(`kubernetes: no Secret ${namespace}/${name}`);
      if (code === 403)
        throw new SecretError(
          `kubernetes: reading Secret ${namespace}/${name}: 403 forbidden (RBAC: get secrets)`,
        );
      if (typeof code === 'number')
        throw new SecretError(`kubernetes: reading Secret ${namespace}/${name}: ${code}`);
      const cause = (err as { cause?: { code?: unknown } }).cause?.code;
      throw new SecretError(
        `kubernetes: reading Secret ${namespace}/${name}: ${typeof cause === 'string' ? cause : (err as Error).name}`,
      );
    } finally {
      clearTimeout(timer);
    }
    const out: Record<string, string> = {};
    for (const [key, value] of Object.entries(secret.data ?? {}))
      out[key] = Buffer.from(value, 'base64').toString('utf8');
    return out;
  }

  async warmUp(): Promise<void> {
    await this.#client();
  }

  #client(): Promise<CoreV1Api> {
    this.#api ??= (async () => {
      const [{ CoreV1Api }, { loadKubeConfig }] = await Promise.all([
        import('@kubernetes/client-node'),
        import('../kubeconfig.js'),
      ]);
      let kc;
      try {
        kc = loadKubeConfig(this.#config.kubeconfig, this.#env);
      } catch (err) {
        throw new SecretError(
          `kubernetes: cannot load the kubeconfig: ${(err as Error).message.slice(0, 200)}`,
        );
      }
      return kc.makeApiClient(CoreV1Api);
    })();
    // A kubeconfig that failed to load is tried again at the next read.
    this.#api.catch(() => (this.#api = undefined));
    return this.#api;
  }

  close(): void {
    this.#api = undefined;
  }
}
