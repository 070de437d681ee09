import { KubeConfig } from '@kubernetes/client-node';

/** The kubeconfig: `kubeconfig` when set, in-cluster credentials under a pod, else $KUBECONFIG or ~/.kube/config. */
export function loadKubeConfig(path: string | undefined, env: NodeJS.ProcessEnv): KubeConfig {
  const kc = new KubeConfig();
  if (path !== undefined) kc.loadFromFile(path);
  else if (env['KUBERNETES_SERVICE_HOST'] !== undefined) kc.loadFromCluster();
  else kc.loadFromDefault();
  return kc;
}
