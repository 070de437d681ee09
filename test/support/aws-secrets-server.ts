import { createHash, createHmac, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local AWS Secrets Manager speaking the JSON 1.1 protocol of `GetSecretValue`
 * (https://docs.aws.amazon.com/secretsmanager/latest/apireference/API_GetSecretValue.html):
 * `POST /` with `Content-Type: application/x-amz-json-1.1` and
 * `X-Amz-Target: secretsmanager.GetSecretValue`, errors as `{"__type", "message"}` with
 * `x-amzn-ErrorType`. Every request's SigV4 signature is checked here, independently of the
 * project's signer: canonical request from what arrived, the key derived from the secret key of
 * the access key named in the Credential, scope `<day>/<region>/secretsmanager/aws4_request`.
 */
export interface AwsSecretsServer {
  url: string;
  putSecret(id: string, value: string): void;
  /** Adds a key pair the server accepts (with a session token it then requires). */
  addCredentials(accessKeyId: string, secretAccessKey: string, sessionToken?: string): void;
  /** Requests and the outcome of their signature check. */
  readonly requests: { target: string | undefined; accessKeyId: string | undefined; verdict: string }[];
  close(): Promise<void>;
}

const sha256 = (text: string | Buffer) => createHash('sha256').update(text).digest('hex');
const hmac = (key: string | Buffer, text: string) => createHmac('sha256', key).update(text).digest();

export async function startAwsSecretsServer(region = 'eu-west-1'): Promise<AwsSecretsServer> {
  const secrets = new Map<string, { value: string; version: string }>();
  const credentials = new Map<string, { secret: string; token: string | undefined }>();
  const requests: AwsSecretsServer['requests'] = [];

  const verify = (
    req: IncomingMessage,
    body: Buffer,
  ): { ok: true; key: string } | { ok: false; type: string; message: string } => {
    const auth = req.headers['authorization'];
    const m =
      typeof auth === 'string'
        ? /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$/.exec(
            auth,
          )
        : null;
    if (m === null)
      return {
        ok: false,
        type: 'IncompleteSignatureException',
        message: 'Authorization header missing or malformed',
      };
    const [, key, day, scopeRegion, service, signedHeaders, signature] = m as unknown as string[];
    const held = credentials.get(key as string);
    if (held === undefined)
      return {
        ok: false,
        type: 'UnrecognizedClientException',
        message: 'The security token included in the request is invalid.',
      };
    if (scopeRegion !== region || service !== 'secretsmanager')
      return {
        ok: false,
        type: 'InvalidSignatureException',
        message: `Credential should be scoped to a valid region and service`,
      };
    const date = req.headers['x-amz-date'];
    if (typeof date !== 'string' || !date.startsWith(day as string))
      return {
        ok: false,
        type: 'IncompleteSignatureException',
        message: 'Date in Credential scope does not match x-amz-date',
      };
    const when = Date.parse(
      `${date.slice(0, 4)}-${date.slice(4, 6)}-${date.slice(6, 8)}T${date.slice(9, 11)}:${date.slice(11, 13)}:${date.slice(13, 15)}Z`,
    );
    if (!Number.isFinite(when) || Math.abs(Date.now() - when) > 5 * 60 * 1000)
      return { ok: false, type: 'InvalidSignatureException', message: 'Signature expired' };
    const names = (signedHeaders as string).split(';');
    for (const required of ['host', 'x-amz-date', 'x-amz-target', 'content-type'])
      if (!names.includes(required))
        return { ok: false, type: 'InvalidSignatureException', message: `${required} is not signed` };
    if (held.token !== undefined) {
      if (req.headers['x-amz-security-token'] !== held.token || !names.includes('x-amz-security-token'))
        return {
          ok: false,
          type: 'UnrecognizedClientException',
          message: 'The security token included in the request is invalid.',
        };
    }
    const canonicalHeaders = names
      .map(
        (n) =>
          `${n}:${String(req.headers[n] ?? '')
            .trim()
            .replace(/\s+/g, ' ')}\n`,
      )
      .join('');
    const url = new URL(req.url ?? '/', 'http://x');
    const canonical = [req.method, url.pathname, '', canonicalHeaders, signedHeaders, sha256(body)].join(
      '\n',
    );
    const scope = `${day}/${region}/secretsmanager/aws4_request`;
    const toSign = ['AWS4-HMAC-SHA256', date, scope, sha256(canonical)].join('\n');
    const signingKey = hmac(
      hmac(hmac(hmac(`AWS4${held.secret}`, day as string), region), 'secretsmanager'),
      'aws4_request',
    );
    const expected = createHmac('sha256', signingKey).update(toSign).digest('hex');
    if (expected !== signature)
      return {
        ok: false,
        type: 'InvalidSignatureException',
        message: 'The request signature we calculated does not match the signature you provided.',
      };
    return { ok: true, key: key as string };
  };

  const handle = (req: IncomingMessage, res: ServerResponse, body: Buffer) => {
    const send = (status: number, payload: unknown, type?: string) =>
      res
        .writeHead(status, {
          'content-type': 'application/x-amz-json-1.1',
          'x-amzn-requestid': randomUUID(),
          ...(type === undefined ? {} : { 'x-amzn-errortype': `${type}:` }),
        })
        .end(JSON.stringify(payload));
    const error = (status: number, type: string, message: string) =>
      send(status, { __type: type, message }, type);
    const target = typeof req.headers['x-amz-target'] === 'string' ? req.headers['x-amz-target'] : undefined;
    const checked = verify(req, body);
    const authKey = /Credential=([^/]+)/.exec(String(req.headers['authorization'] ?? ''))?.[1];
    requests.push({ target, accessKeyId: authKey, verdict: checked.ok ? 'ok' : checked.type });
    if (!checked.ok)
      return error(
        checked.type === 'IncompleteSignatureException' ? 400 : 403,
        checked.type,
        checked.message,
      );
    if (req.method !== 'POST' || req.headers['content-type'] !== 'application/x-amz-json-1.1')
      return error(400, 'SerializationException', 'Start of structure or map found where not expected.');
    if (target !== 'secretsmanager.GetSecretValue') return error(400, 'UnknownOperationException', '');
    let input: { SecretId?: unknown };
    try {
      input = JSON.parse(body.toString('utf8')) as typeof input;
    } catch {
      return error(400, 'SerializationException', 'Start of structure or map found where not expected.');
    }
    if (typeof input.SecretId !== 'string')
      return error(
        400,
        'ValidationException',
        "1 validation error detected: Value null at 'secretId' failed to satisfy constraint: Member must not be null",
      );
    const secret = secrets.get(input.SecretId);
    if (secret === undefined)
      return error(400, 'ResourceNotFoundException', "Secrets Manager can't find the specified secret.");
    send(200, {
      ARN: `arn:aws:secretsmanager:${region}:123456789012:secret:${input.SecretId}-AbCdEf`,
      Name: input.SecretId,
      VersionId: secret.version,
      SecretString: secret.value,
      VersionStages: ['AWSCURRENT'],
      CreatedDate: Date.now() / 1000,
    });
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => handle(req, res, Buffer.concat(chunks)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    putSecret: (id, value) => void secrets.set(id, { value, version: randomUUID() }),
    addCredentials: (id, secret, token) => void credentials.set(id, { secret, token }),
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
