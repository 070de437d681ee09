import cluster from 'node:cluster';

export { ClusterPrimary, type ClusterPrimaryOptions } from './primary.js';
export { runClusterWorker } from './worker.js';
export { resolveWorkers, probeCpus, cgroupQuota, type CpuProbe } from './workers-count.js';

/** True in a process forked by the primary of `workers: N`. */
export function isClusterWorker(): boolean {
  return cluster.isWorker && process.env.SWITCHYARD_WORKER !== undefined;
}
