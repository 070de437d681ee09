import type { Page } from 'playwright-core';
import { mockPolicyYaml } from '../admin/harness.js';

/** The configuration both undo test files edit: a route, a consumer, a shared config and a supernode. */
export const GATEWAY_YAML = `routes:
  - name: hello
    match: { path: /hello }
    policy: hello-policy
consumers:
  - name: bob
    credentials: { key-auth: { key: bobs-key } }
plugin_configs:
  - name: teapot
    type: mocking
    config: { response_status: 418 }
supernodes:
  - name: guard
    nodes:
      - { id: input, type: input }
      - { id: output, type: output }
    edges:
      - { from: input.out, to: output.in }
policies:${mockPolicyYaml('hello-policy', 'hello')}`;

export const key = (page: Page, combo: string) => page.keyboard.press(combo);

/** Clicks a link and answers the unsaved-changes question with `accept`; returns the question. */
export async function leave(page: Page, link: string, accept: boolean): Promise<string> {
  const asked: string[] = [];
  page.once('dialog', (dialog) => {
    asked.push(dialog.message());
    void (accept ? dialog.accept() : dialog.dismiss());
  });
  await page.getByRole('link', { name: link, exact: true }).click();
  await page.waitForFunction(() => true);
  return asked[0] ?? '';
}
