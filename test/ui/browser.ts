/**
 * Headless Chromium for the flow page's tests: Debian's chromium (scripts/packages.d/70-ui.txt)
 * driven by playwright-core, and where screenshots are kept: `.tap/artifacts/ui/NAME.png` (tap's
 * own directory, not committed, kept after the run).
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';

/** Debian's chromium. */
export const CHROMIUM = '/usr/bin/chromium';

/** Where the screenshots are kept. */
export const ARTIFACTS = join(import.meta.dirname, '..', '..', '.tap', 'artifacts', 'ui');

/** Why the browser tests cannot run here (one line), or false. */
export function chromiumMissing(): string | false {
  return existsSync(CHROMIUM) ? false : `needs Debian's chromium at ${CHROMIUM}: run bash scripts/setup.sh as root (scripts/packages.d/70-ui.txt)`;
}

/** A headless browser, closed at `teardown`. Root runs it without its user-namespace sandbox. */
export async function launch(t: { teardown(fn: () => unknown): void }): Promise<Browser> {
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: process.getuid?.() === 0 ? ['--no-sandbox'] : [] });
  t.teardown(() => browser.close());
  return browser;
}

/** Takes a screenshot of the whole page and keeps it; returns its path. */
export async function keepScreenshot(page: Page, name: string): Promise<string> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const file = join(ARTIFACTS, `${name}.png`);
  writeFileSync(file, await page.screenshot({ fullPage: true }));
  return file;
}
