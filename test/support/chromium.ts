import { existsSync } from 'node:fs';
import { chromium, type Browser, type BrowserServer } from 'playwright-core';

/**
 * The Chromium the UI tests drive: `CHROMIUM_BIN`, else Debian's package — its binary itself rather
 * than the /usr/bin/chromium shell wrapper, which adds desktop flags (GPU rasterization, extension
 * loading) that cost CPU in a headless test and are overridden by nothing here.
 */
const DEBIAN_BINARY = '/usr/lib/chromium/chromium';
export const CHROMIUM_BIN =
  process.env.CHROMIUM_BIN ?? (existsSync(DEBIAN_BINARY) ? DEBIAN_BINARY : '/usr/bin/chromium');

/**
 * A reason to skip the browser tests, or false to run them. Only outside CI:
 * with `CI=true` a missing Chromium must fail the run, so the tests run and
 * fail at launch instead of passing silently.
 */
export function chromiumSkipReason(): string | false {
  if (existsSync(CHROMIUM_BIN) || process.env.CI === 'true') return false;
  return `no Chromium at ${CHROMIUM_BIN} (install the chromium package or set CHROMIUM_BIN)`;
}

const LAUNCH_OPTIONS = {
  executablePath: CHROMIUM_BIN,
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking'],
};

/**
 * The endpoint of the Chromium that scripts/run-tests.mjs starts once for every browser test file
 * of a run (test/support/chromium-server.ts): launching one costs ≈ 3–4 s of CPU, a context in it
 * a few milliseconds, and each test opens a fresh context either way.
 */
export const SHARED_CHROMIUM_ENV = 'SWITCHYARD_TEST_CHROMIUM_WS';

/**
 * Headless Chromium with the flags this machine kind needs (no sandbox as root, no GPU): the run's
 * shared instance when the runner started one (`close()` then only disconnects, closing this
 * file's contexts), else one of this file's own.
 */
export function launchChromium(): Promise<Browser> {
  const shared = process.env[SHARED_CHROMIUM_ENV];
  if (shared !== undefined && shared !== '') return chromium.connect(shared);
  return launchOwnChromium();
}

/** A Chromium of this process's own. */
export function launchOwnChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM_BIN)) {
    return Promise.reject(new Error(`Chromium is required here (CI=true) but ${CHROMIUM_BIN} is missing`));
  }
  return chromium.launch(LAUNCH_OPTIONS);
}

/** A Chromium serving clients over a WebSocket (`chromium.connect`), for the runner to share. */
export function launchChromiumServer(): Promise<BrowserServer> {
  return chromium.launchServer({ ...LAUNCH_OPTIONS, host: '127.0.0.1' });
}
