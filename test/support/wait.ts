import { setTimeout as sleep } from 'node:timers/promises';

/** Polls `check` every `intervalMs` until it returns true; throws after `timeoutMs`. Never a fixed sleep. */
export async function waitFor(
  check: () => boolean | Promise<boolean>,
  { timeoutMs = 10000, intervalMs = 20, what = 'condition' } = {},
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(intervalMs);
  }
}
