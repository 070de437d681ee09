#!/usr/bin/env node
// Writes the switchyard.dev CRDs into deploy/helm/switchyard/crds/ from the gateway.yaml schemas
// (src/kubernetes/crd-schema.ts). Run after changing a node type, the supernode or consumer schema:
//   SWITCHYARD_FROM_SOURCE=1 node_modules/.bin/node --import tsx scripts/build-crds.mjs
// test/kubernetes/crd-files.test.ts fails while the committed files differ from what this writes.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');
const { crdFiles } = await import('../src/kubernetes/crd-schema.ts');
const { registry } = await import('../src/plugins/index.ts');
const dir = join(root, 'deploy/helm/switchyard/crds');
mkdirSync(dir, { recursive: true });
for (const { file, text } of crdFiles([...registry.keys()])) {
  writeFileSync(join(dir, file), text);
  console.log(`wrote deploy/helm/switchyard/crds/${file}`);
}
// As `npm run lint` (prettier --check .) wants them.
execFileSync(join(root, 'node_modules/.bin/prettier'), ['--write', dir], { stdio: 'ignore' });
