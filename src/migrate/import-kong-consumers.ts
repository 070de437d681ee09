import type { ConsumerConfig } from '../config/gateway.js';
import type { ImportReport } from './import-report.js';
import { isObj, objects, str, strings, type ImportResult, type Obj } from './import-source.js';

/**
 * Kong consumers and their credentials (nested, or top-level with a `consumer` reference) as
 * `consumers:` entries, and Kong certificates as files beside the output. Credential values are
 * kept as written (the file is the operator's own); the report names them, never quotes them.
 */

export interface KongConsumers {
  entries: { name: string; source: Obj; where: string }[];
  output: ConsumerConfig[];
  nameOf(ref: string): string | undefined;
  /** Output names of the consumers in any of these ACL groups. */
  inGroups(groups: string[]): string[];
  /** Consumers with at least one consumer-scoped plugin. */
  withPlugins(plugins: { consumer?: string }[]): string[];
  certificates(doc: Obj): ImportResult['files'];
}

const CONSUMER_KEYS = new Set([
  'id',
  'username',
  'custom_id',
  'tags',
  'plugins',
  'created_at',
  'updated_at',
  'keyauth_credentials',
  'basicauth_credentials',
  'jwt_secrets',
  'hmacauth_credentials',
  'acls',
]);

const CREDENTIALS = [
  'keyauth_credentials',
  'basicauth_credentials',
  'jwt_secrets',
  'hmacauth_credentials',
  'acls',
] as const;

export function kongConsumers(doc: Obj, report: ImportReport): KongConsumers {
  const entries: KongConsumers['entries'] = [];
  const byRef = new Map<string, string>();
  const creds = new Map<string, Record<(typeof CREDENTIALS)[number], Obj[]>>();
  const empty = (): Record<(typeof CREDENTIALS)[number], Obj[]> => ({
    keyauth_credentials: [],
    basicauth_credentials: [],
    jwt_secrets: [],
    hmacauth_credentials: [],
    acls: [],
  });
  objects(doc.consumers, 'consumers').forEach((c, i) => {
    const name = str(c.username) ?? str(c.custom_id) ?? str(c.id) ?? `consumer-${i + 1}`;
    const where = `consumers[${name}]`;
    entries.push({ name, source: c, where });
    for (const ref of [c.id, c.username, c.custom_id])
      if (str(ref) !== undefined) byRef.set(str(ref) ?? '', name);
    const mine = empty();
    for (const kind of CREDENTIALS) mine[kind].push(...objects(c[kind], `${where}.${kind}`));
    creds.set(name, mine);
    for (const key of Object.keys(c))
      if (!CONSUMER_KEYS.has(key) && c[key] !== null)
        report.unmappedItem(
          `${where}.${key}`,
          'not imported (only key-auth, basic-auth, jwt, hmac-auth and acl credentials are)',
        );
  });
  for (const kind of CREDENTIALS) {
    objects(doc[kind], kind).forEach((cred, i) => {
      const ref = isObj(cred.consumer)
        ? (str(cred.consumer.username) ?? str(cred.consumer.id))
        : str(cred.consumer);
      const name = ref === undefined ? undefined : byRef.get(ref);
      if (name === undefined) {
        report.unmappedItem(`${kind}[${i}]`, 'names no consumer of the file');
        return;
      }
      creds.get(name)?.[kind].push(cred);
    });
  }

  const groups = new Map<string, string[]>();
  const output: ConsumerConfig[] = entries.map(({ name, source, where }) => {
    const mine = creds.get(name) ?? empty();
    const out: ConsumerConfig = { name };
    const custom = str(source.custom_id);
    if (custom !== undefined && custom !== name) out.labels = { custom_id: custom };
    else if (custom !== undefined) out.labels = { custom_id: custom };
    const credentials: Record<string, Record<string, unknown>> = {};
    const first = (kind: (typeof CREDENTIALS)[number], what: string): Obj | undefined => {
      const list = mine[kind];
      if (list.length > 1)
        for (let i = 1; i < list.length; i++)
          report.unmappedItem(
            `${where}.${kind}[${i}]`,
            `a consumer holds one ${what} credential; the first is kept`,
          );
      return list[0];
    };
    const key = first('keyauth_credentials', 'key-auth');
    if (key !== undefined && str(key.key) !== undefined) credentials['key-auth'] = { key: str(key.key) };
    else if (key !== undefined)
      report.unmappedItem(`${where}.keyauth_credentials[0]`, 'no key (Kong generates one)');
    const basic = first('basicauth_credentials', 'basic-auth');
    if (basic !== undefined) {
      const password = str(basic.password) ?? '';
      credentials['basic-auth'] = { username: str(basic.username) ?? name, password };
      if (/^[0-9a-f]{40}$/.test(password))
        report.note(
          `${where}.basicauth_credentials[0].password`,
          'looks like the hash a Kong dump writes: the gateway compares it as the password itself',
        );
    }
    const jwt = first('jwt_secrets', 'jwt');
    if (jwt !== undefined) {
      const algorithm = str(jwt.algorithm) ?? 'HS256';
      const cred: Record<string, unknown> = { key: str(jwt.key) ?? name, algorithm };
      if (algorithm.startsWith('HS')) cred.secret = str(jwt.secret);
      else cred.public_key = str(jwt.rsa_public_key);
      if (str(jwt.key) === undefined)
        report.unmappedItem(`${where}.jwt_secrets[0].key`, 'no key (Kong generates one)');
      else if ((cred.secret ?? cred.public_key) === undefined)
        report.unmappedItem(
          `${where}.jwt_secrets[0]`,
          algorithm.startsWith('HS') ? 'no secret' : 'no rsa_public_key',
        );
      else credentials['jwt-auth'] = cred;
    }
    const hmac = first('hmacauth_credentials', 'hmac-auth');
    if (hmac !== undefined) {
      if (str(hmac.secret) === undefined)
        report.unmappedItem(`${where}.hmacauth_credentials[0]`, 'no secret');
      else
        credentials['hmac-auth'] = { access_key: str(hmac.username) ?? name, secret_key: str(hmac.secret) };
    }
    const acls = mine.acls.map((a) => str(a.group)).filter((g): g is string => g !== undefined);
    for (const g of acls) groups.set(g, [...(groups.get(g) ?? []), name]);
    if (acls.length === 1) out.group = acls[0] as string;
    else if (acls.length > 1)
      report.note(
        `${where}.acls`,
        `in ${acls.length} groups: acl plugins list the consumer by name; $consumer_group_id is unset`,
      );
    if (Object.keys(credentials).length > 0) out.credentials = credentials;
    return out;
  });

  return {
    entries,
    output,
    nameOf: (ref) => byRef.get(ref),
    inGroups: (list) => [...new Set(list.flatMap((g) => groups.get(g) ?? []))].sort(),
    withPlugins: (plugins) => entries.map((e) => e.name).filter((n) => plugins.some((p) => p.consumer === n)),
    certificates: (d) => kongCertificates(d, report),
  };
}

function kongCertificates(doc: Obj, report: ImportReport): ImportResult['files'] {
  const files: ImportResult['files'] = [];
  const taken = new Set<string>();
  objects(doc.certificates, 'certificates').forEach((c, i) => {
    const snis = [
      ...objects(Array.isArray(c.snis) ? c.snis.filter(isObj) : [], 'snis').map((s) => str(s.name)),
      ...strings(Array.isArray(c.snis) ? c.snis.filter((s) => typeof s === 'string') : []),
    ].filter((s): s is string => s !== undefined);
    for (const s of objects(doc.snis, 'snis')) {
      const ref = isObj(s.certificate) ? str(s.certificate.id) : str(s.certificate);
      if (ref !== undefined && ref === str(c.id) && str(s.name) !== undefined) snis.push(str(s.name) ?? '');
    }
    const where = `certificates[${str(c.id) ?? i}]`;
    const cert = str(c.cert);
    const key = str(c.key);
    if (cert === undefined || key === undefined || snis.length === 0) {
      report.unmappedItem(
        where,
        snis.length === 0
          ? 'a certificate without SNIs (a default certificate goes in system.yaml tls by hand)'
          : 'no cert or key',
      );
      return;
    }
    if (str(c.cert_alt) !== undefined)
      report.unmappedItem(`${where}.cert_alt`, 'one certificate per name is served');
    let stem = (snis[0] ?? `cert-${i + 1}`).replace(/^\*\./, 'wildcard.').replace(/[^A-Za-z0-9.-]/g, '_');
    while (taken.has(stem)) stem = `${stem}-${i + 1}`;
    taken.add(stem);
    files.push(
      { path: `certs/${stem}.crt`, content: cert, where },
      { path: `certs/${stem}.key`, content: key, where },
    );
    if (report.systemYaml.length === 0) report.systemYaml.push('tls:', '  sni_certs:');
    for (const name of snis)
      report.systemYaml.push(
        `    - { server_name: "${name}", cert_path: certs/${stem}.crt, key_path: certs/${stem}.key }`,
      );
  });
  return files;
}
