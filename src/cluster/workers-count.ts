import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

/** What `workers: auto` looks at; injectable so tests can describe any machine. */
export interface CpuProbe {
  /** Cores this process may run on (affinity-aware). */
  cores: number;
  /** The CPU quota in cores from the cgroup (fractional), or undefined when unlimited or unknown. */
  quota: number | undefined;
}

/**
 * system.yaml `workers`: a number is taken as is; `auto` is the cores this
 * process may use — `os.availableParallelism()` capped by the cgroup CPU quota
 * (a container limited to 2 CPUs on a 64-core host runs 2 workers), at least 1.
 * See docs/workers.md.
 */
export function resolveWorkers(value: number | 'auto', probe: CpuProbe = probeCpus()): number {
  if (value !== 'auto') return value;
  const quota = probe.quota === undefined ? Infinity : Math.floor(probe.quota);
  return Math.max(1, Math.min(probe.cores, quota));
}

export function probeCpus(root = '/sys/fs/cgroup'): CpuProbe {
  return { cores: availableParallelism(), quota: cgroupQuota(root) };
}

/** cgroup v2 `cpu.max` ("<quota> <period>" or "max <period>"), else v1 `cpu.cfs_quota_us`/`cpu.cfs_period_us`. */
export function cgroupQuota(root = '/sys/fs/cgroup'): number | undefined {
  const v2 = readText(`${root}/cpu.max`);
  if (v2 !== undefined) {
    const [quota, period] = v2.trim().split(/\s+/);
    return ratio(quota, period);
  }
  return ratio(readText(`${root}/cpu/cpu.cfs_quota_us`), readText(`${root}/cpu/cpu.cfs_period_us`));
}

function ratio(quota: string | undefined, period: string | undefined): number | undefined {
  if (quota === undefined || period === undefined || quota.trim() === 'max') return undefined;
  const q = Number(quota);
  const p = Number(period);
  // v1 writes -1 for "no limit".
  return Number.isFinite(q) && Number.isFinite(p) && q > 0 && p > 0 ? q / p : undefined;
}

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}
