import { readdirSync, readFileSync } from 'node:fs';
import { catalogEntry } from '../catalog.js';
import { registry } from '../../plugins/index.js';

/**
 * The docs as MCP resources (docs/mcp.md#resources): every page of docs/
 * (`switchyard://docs/concepts/<name>`), every node type page of
 * docs/plugins/ (`switchyard://docs/plugins/<type>`), and per node type its
 * catalog entry, JSON Schema and ports included
 * (`switchyard://node-types/<type>`). The reference's `featherbit://` URIs
 * read the same resources.
 */

export const SCHEME = 'switchyard://';
const REFERENCE_SCHEME = 'featherbit://';

const DOCS = new URL('../../../docs/', import.meta.url);
const PLUGIN_DOCS = new URL('plugins/', DOCS);
const PAGE = /^[a-z0-9-]+$/;

export interface ResourceEntry {
  uri: string;
  name: string;
  title: string;
  description: string;
  mimeType: string;
}

export interface ResourceContents {
  uri: string;
  mimeType: string;
  text: string;
}

/** Markdown pages of a docs folder, by name without `.md`; none when the folder is missing. */
function pages(dir: URL): string[] {
  try {
    return readdirSync(dir)
      .filter((f) => f.endsWith('.md'))
      .map((f) => f.slice(0, -3))
      .filter((name) => PAGE.test(name) || name === 'README')
      .sort();
  } catch {
    return [];
  }
}

/** The first `# heading` of a page, for its title. */
function headingOf(dir: URL, name: string): string {
  try {
    const first = readFileSync(new URL(`${name}.md`, dir), 'utf8').match(/^#\s+(.+)$/m);
    return first?.[1]?.trim() ?? name;
  } catch {
    return name;
  }
}

let listed: ResourceEntry[] | undefined;

/** Every resource; the docs are read once per process (they ship with the build). */
export function listResources(): ResourceEntry[] {
  listed ??= [
    ...pages(DOCS).map((name) => ({
      uri: `${SCHEME}docs/concepts/${name}`,
      name: `docs/${name}.md`,
      title: headingOf(DOCS, name),
      description: `Documentation page docs/${name}.md.`,
      mimeType: 'text/markdown',
    })),
    ...pages(PLUGIN_DOCS).map((name) => ({
      uri: `${SCHEME}docs/plugins/${name}`,
      name: `docs/plugins/${name}.md`,
      title: headingOf(PLUGIN_DOCS, name),
      description:
        name === 'README'
          ? 'Index of the node types.'
          : `Node type ${name}: config, ports, errors and an example.`,
      mimeType: 'text/markdown',
    })),
    ...[...registry.values()].map((def) => ({
      uri: `${SCHEME}node-types/${def.type}`,
      name: `node-types/${def.type}`,
      title: `Node type ${def.type}`,
      description: `${def.description} JSON: ports and the JSON Schema of its config.`,
      mimeType: 'application/json',
    })),
  ];
  return listed;
}

/** URI templates, so a client can address a page or node type it has not listed. */
export const RESOURCE_TEMPLATES = [
  {
    uriTemplate: `${SCHEME}docs/concepts/{name}`,
    name: 'docs-page',
    description: 'A documentation page of docs/, by file name without .md.',
    mimeType: 'text/markdown',
  },
  {
    uriTemplate: `${SCHEME}docs/plugins/{type}`,
    name: 'node-type-docs',
    description: 'The documentation page of a node type.',
    mimeType: 'text/markdown',
  },
  {
    uriTemplate: `${SCHEME}node-types/{type}`,
    name: 'node-type',
    description: 'A node type: ports, templated fields and the JSON Schema of its config.',
    mimeType: 'application/json',
  },
];

/** The contents of `uri`, or undefined when there is no such resource. */
export function readResource(uri: string): ResourceContents | undefined {
  const path = uri.startsWith(SCHEME)
    ? uri.slice(SCHEME.length)
    : uri.startsWith(REFERENCE_SCHEME)
      ? uri.slice(REFERENCE_SCHEME.length)
      : undefined;
  if (path === undefined) return undefined;
  const [kind, sub, name, ...rest] = path.split('/');
  if (rest.length > 0) return undefined;
  if (kind === 'node-types' && name === undefined && sub !== undefined) {
    const def = registry.get(sub);
    if (def === undefined) return undefined;
    return { uri, mimeType: 'application/json', text: JSON.stringify(catalogEntry(def), null, 2) };
  }
  if (kind !== 'docs' || name === undefined || !(PAGE.test(name) || name === 'README')) return undefined;
  // The reference's docs/reference/* pages are our concept pages.
  const dir = sub === 'plugins' ? PLUGIN_DOCS : sub === 'concepts' || sub === 'reference' ? DOCS : undefined;
  if (dir === undefined) return undefined;
  try {
    return { uri, mimeType: 'text/markdown', text: readFileSync(new URL(`${name}.md`, dir), 'utf8') };
  } catch {
    return undefined;
  }
}
