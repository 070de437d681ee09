import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Document, isMap, isScalar, isSeq, parse, visit } from 'yaml';
import { checkGatewayShape } from '../config/gateway.js';
import { ConfigRejected } from '../config/schema-validate.js';
import { silentLogger } from '../core/logger.js';
import { compileWith } from '../plugins/compile-with.js';
import { ImportReport } from './import-report.js';
import { ImportInputError, type ImportResult } from './import-source.js';

const USAGE = `Usage:
  switchyard import kong FILE [-o gateway.yaml]     Kong 3.x declarative (decK) file
  switchyard import apisix FILE [-o gateway.yaml]   APISIX standalone apisix.yaml`;

type Importer = (doc: Record<string, unknown>, report: ImportReport) => ImportResult;

const IMPORTERS: Record<string, () => Promise<Importer>> = {
  kong: async () => (await import('./import-kong.js')).importKong,
  apisix: async () => (await import('./import-apisix.js')).importApisix,
};

/**
 * `switchyard import kong|apisix FILE [-o F]`: the gateway.yaml on stdout (or in F), the report on
 * stderr. Exit 0 when every item was mapped, 1 when the report lists unmapped items (the output is
 * written all the same), 2 on a usage error or an input that cannot be read or parsed.
 */
export async function runImport(argv: string[]): Promise<number> {
  let kind: string | undefined;
  let file: string | undefined;
  let output: string | undefined;
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: { output: { type: 'string', short: 'o' }, help: { type: 'boolean', short: 'h' } },
    });
    if (values.help === true) {
      process.stdout.write(`${USAGE}\n`);
      return 0;
    }
    [kind, file] = positionals;
    output = values.output;
    if (positionals.length !== 2 || kind === undefined || !(kind in IMPORTERS))
      throw new TypeError(`import needs a source kind (kong or apisix) and a file`);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n\n${USAGE}\n`);
    return 2;
  }
  const load = IMPORTERS[kind];
  if (load === undefined || file === undefined) return 2;

  let doc: Record<string, unknown>;
  try {
    const text = readFileSync(file, 'utf8');
    const parsed: unknown = parse(text, { maxAliasCount: 1000 });
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
      throw new ImportInputError('the file does not hold a YAML or JSON mapping');
    doc = parsed as Record<string, unknown>;
  } catch (err) {
    process.stderr.write(`cannot read ${file}: ${(err as Error).message}\n`);
    return 2;
  }

  const report = new ImportReport();
  let result: ImportResult;
  try {
    result = (await load())(doc, report);
  } catch (err) {
    if (!(err instanceof ImportInputError)) throw err;
    process.stderr.write(`cannot import ${file}: ${err.message}\n`);
    return 2;
  }
  validateOutput(result, report, output);

  const text = renderYaml(
    result.gateway,
    `# Imported from ${kind} (${file}) by switchyard import ${kind}.\n`,
  );
  if (output === undefined) {
    process.stdout.write(text);
    for (const f of result.files)
      report.unmappedItem(f.where, 'written only with -o (the file goes beside the output)');
  } else {
    const dir = dirname(resolve(output));
    for (const f of result.files) {
      mkdirSync(join(dir, dirname(f.path)), { recursive: true });
      writeFileSync(join(dir, f.path), f.content, { mode: 0o600 });
    }
    const tmp = `${output}.import-${process.pid}.tmp`;
    writeFileSync(tmp, text);
    renameSync(tmp, output);
    process.stderr.write(`wrote ${output}\n`);
  }
  process.stderr.write(report.format(file));
  return report.unmapped.length > 0 ? 1 : 0;
}

/** The output goes through the real compiler; anything it refuses is listed as not mapped. */
function validateOutput(result: ImportResult, report: ImportReport, output: string | undefined): void {
  try {
    const runtime = compileWith(
      checkGatewayShape(JSON.parse(JSON.stringify(result.gateway))),
      silentLogger,
      process.env,
      output === undefined ? undefined : resolve(output),
    );
    void runtime.close();
  } catch (err) {
    if (!(err instanceof ConfigRejected)) throw err;
    for (const issue of err.issues)
      report.unmappedItem(
        `output ${issue.path}`,
        `the imported configuration does not validate: ${issue.message}`,
      );
  }
}

/** Block YAML with edges and route matches in flow style, the way the docs write them. */
export function renderYaml(gateway: Record<string, unknown>, header: string): string {
  const doc = new Document(gateway);
  visit(doc, {
    Pair(_key, pair, path) {
      const key = isScalar(pair.key) ? String(pair.key.value) : '';
      const parent = path[path.length - 1];
      if (!isMap(parent)) return;
      if ((key === 'match' || key === 'targets') && (isMap(pair.value) || isSeq(pair.value))) {
        pair.value.flow = true;
      }
      if (key === 'edges' && isSeq(pair.value))
        for (const item of pair.value.items) if (isMap(item)) item.flow = true;
    },
  });
  return header + doc.toString({ lineWidth: 0 });
}
