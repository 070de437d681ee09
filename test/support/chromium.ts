import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

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

/** Headless Chromium with the flags this machine kind needs (no sandbox as root, no GPU). */
export function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM_BIN)) {
    return Promise.reject(new Error(`Chromium is required here (CI=true) but ${CHROMIUM_BIN} is missing`));
  }
  return chromium.launch(LAUNCH_OPTIONS);
}
