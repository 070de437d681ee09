import cluster from 'node:cluster';

/** True in a process forked by the primary of `workers: N`. */
export function isClusterWorker(): boolean {
  return cluster.isWorker && process.env.SWITCHYARD_WORKER !== undefined;
}
