import assert from 'node:assert/strict';
import { test } from 'node:test';
import { canonicalQueryString, formatSigningDate, SigV4Signer, type Pair } from '../../src/signing/sigv4.js';

// The provider's published version-4 test suite (aws-sig-v4-test-suite, 2015-08-30): fixed
// credentials, region, service and time; expected values copied from the suite's .creq/.sts/.authz files.
const SUITE = {
  accessKey: 'AKIDEXAMPLE',
  secretKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
  region: 'us-east-1',
  service: 'service',
} as const;
const WHEN = new Date(Date.UTC(2015, 7, 30, 12, 36, 0));
const AMZ = { date: 'x-amz-date', securityToken: 'x-amz-security-token' } as const;
const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
const SCOPE = 'AKIDEXAMPLE/20150830/us-east-1/service/aws4_request';
const STS_TOKEN =
  'AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA==';

interface Vector {
  name: string;
  method: string;
  path: string;
  query?: Pair[];
  headers?: Pair[];
  body?: string;
  sessionToken?: string;
  canonicalRequest: string;
  stringToSign: string;
  authorization: string;
}

const HOST: Pair = ['Host', 'example.amazonaws.com'];

const VECTORS: Vector[] = [
  {
    name: 'get-vanilla',
    method: 'GET',
    path: '/',
    canonicalRequest: [
      'GET',
      '/',
      '',
      'host:example.amazonaws.com',
      'x-amz-date:20150830T123600Z',
      '',
      'host;x-amz-date',
      EMPTY_SHA256,
    ].join('\n'),
    stringToSign: [
      'AWS4-HMAC-SHA256',
      '20150830T123600Z',
      '20150830/us-east-1/service/aws4_request',
      'bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63',
    ].join('\n'),
    authorization: `AWS4-HMAC-SHA256 Credential=${SCOPE}, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31`,
  },
  {
    name: 'post-vanilla',
    method: 'POST',
    path: '/',
    canonicalRequest: [
      'POST',
      '/',
      '',
      'host:example.amazonaws.com',
      'x-amz-date:20150830T123600Z',
      '',
      'host;x-amz-date',
      EMPTY_SHA256,
    ].join('\n'),
    stringToSign: [
      'AWS4-HMAC-SHA256',
      '20150830T123600Z',
      '20150830/us-east-1/service/aws4_request',
      '553f88c9e4d10fc9e109e2aeb65f030801b70c2f6468faca261d401ae622fc87',
    ].join('\n'),
    authorization: `AWS4-HMAC-SHA256 Credential=${SCOPE}, SignedHeaders=host;x-amz-date, Signature=5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b`,
  },
  {
    // GET /?Param2=value2&Param1=value1: parameters sorted by name, case-sensitively.
    name: 'get-vanilla-query-order-key-case',
    method: 'GET',
    path: '/',
    query: [
      ['Param2', 'value2'],
      ['Param1', 'value1'],
    ],
    canonicalRequest: [
      'GET',
      '/',
      'Param1=value1&Param2=value2',
      'host:example.amazonaws.com',
      'x-amz-date:20150830T123600Z',
      '',
      'host;x-amz-date',
      EMPTY_SHA256,
    ].join('\n'),
    stringToSign: [
      'AWS4-HMAC-SHA256',
      '20150830T123600Z',
      '20150830/us-east-1/service/aws4_request',
      '816cd5b414d056048ba4f7c5386d6e0533120fb1fcfa93762cf0fc39e2cf19e0',
    ].join('\n'),
    authorization: `AWS4-HMAC-SHA256 Credential=${SCOPE}, SignedHeaders=host;x-amz-date, Signature=b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500`,
  },
  {
    name: 'get-vanilla-utf8-query',
    method: 'GET',
    path: '/',
    query: [['ሴ', 'bar']],
    canonicalRequest: [
      'GET',
      '/',
      '%E1%88%B4=bar',
      'host:example.amazonaws.com',
      'x-amz-date:20150830T123600Z',
      '',
      'host;x-amz-date',
      EMPTY_SHA256,
    ].join('\n'),
    stringToSign: [
      'AWS4-HMAC-SHA256',
      '20150830T123600Z',
      '20150830/us-east-1/service/aws4_request',
      'eb30c5bed55734080471a834cc727ae56beb50e5f39d1bff6d0d38cb192a7073',
    ].join('\n'),
    authorization: `AWS4-HMAC-SHA256 Credential=${SCOPE}, SignedHeaders=host;x-amz-date, Signature=2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e12c9027818dd04`,
  },
  {
    name: 'get-utf8',
    method: 'GET',
    path: '/ሴ',
    canonicalRequest: [
      'GET',
      '/%E1%88%B4',
      '',
      'host:example.amazonaws.com',
      'x-amz-date:20150830T123600Z',
      '',
      'host;x-amz-date',
      EMPTY_SHA256,
    ].join('\n'),
    stringToSign: [
      'AWS4-HMAC-SHA256',
      '20150830T123600Z',
      '20150830/us-east-1/service/aws4_request',
      '2a0a97d02205e45ce2e994789806b19270cfbbb0921b278ccf58f5249ac42102',
    ].join('\n'),
    authorization: `AWS4-HMAC-SHA256 Credential=${SCOPE}, SignedHeaders=host;x-amz-date, Signature=8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85`,
  },
  {
    name: 'post-x-www-form-urlencoded',
    method: 'POST',
    path: '/',
    headers: [['Content-Type', 'application/x-www-form-urlencoded'], HOST],
    body: 'Param1=value1',
    canonicalRequest: [
      'POST',
      '/',
      '',
      'content-type:application/x-www-form-urlencoded',
      'host:example.amazonaws.com',
      'x-amz-date:20150830T123600Z',
      '',
      'content-type;host;x-amz-date',
      '9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e',
    ].join('\n'),
    stringToSign: [
      'AWS4-HMAC-SHA256',
      '20150830T123600Z',
      '20150830/us-east-1/service/aws4_request',
      '42a5e5bb34198acb3e84da4f085bb7927f2bc277ca766e6d19c73c2154021281',
    ].join('\n'),
    authorization: `AWS4-HMAC-SHA256 Credential=${SCOPE}, SignedHeaders=content-type;host;x-amz-date, Signature=ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a`,
  },
  {
    // post-sts-token/post-sts-header-before: the session token is a signed header.
    name: 'post-sts-header-before',
    method: 'POST',
    path: '/',
    sessionToken: STS_TOKEN,
    canonicalRequest: [
      'POST',
      '/',
      '',
      'host:example.amazonaws.com',
      'x-amz-date:20150830T123600Z',
      `x-amz-security-token:${STS_TOKEN}`,
      '',
      'host;x-amz-date;x-amz-security-token',
      EMPTY_SHA256,
    ].join('\n'),
    stringToSign: [
      'AWS4-HMAC-SHA256',
      '20150830T123600Z',
      '20150830/us-east-1/service/aws4_request',
      'c237e1b440d4c63c32ca95b5b99481081cb7b13c7e40434868e71567c1a882f6',
    ].join('\n'),
    authorization: `AWS4-HMAC-SHA256 Credential=${SCOPE}, SignedHeaders=host;x-amz-date;x-amz-security-token, Signature=85d96828115b5dc0cfc3bd16ad9e210dd772bbebba041836c64533a82be05ead`,
  },
];

for (const vector of VECTORS) {
  test(`sigv4: reproduces the published ${vector.name} vector byte for byte`, () => {
    const signer = new SigV4Signer({ ...SUITE, headerNames: AMZ, sessionToken: vector.sessionToken });
    const signed = signer.sign(
      {
        method: vector.method,
        path: vector.path,
        query: vector.query ?? [],
        headers: vector.headers ?? [HOST],
        payload: vector.body ?? null,
      },
      WHEN,
    );
    assert.equal(signed.canonicalRequest, vector.canonicalRequest);
    assert.equal(signed.stringToSign, vector.stringToSign);
    assert.equal(signed.authorization, vector.authorization);
    assert.equal(signed.date, '20150830T123600Z');
  });
}

test('sigv4: returns the date, token and authorization headers to send, in that order', () => {
  const signer = new SigV4Signer({ ...SUITE, headerNames: AMZ, sessionToken: 'tok' });
  const signed = signer.sign({ method: 'GET', path: '/', query: [], headers: [HOST], payload: null }, WHEN);
  assert.deepEqual(signed.headers, [
    'x-amz-date',
    '20150830T123600Z',
    'x-amz-security-token',
    'tok',
    'authorization',
    signed.authorization,
  ]);
});

test('sigv4: the date and token header names are parameters and are what gets signed', () => {
  const cloud = new SigV4Signer({
    ...SUITE,
    headerNames: { date: 'X-Cloud-Date', securityToken: 'X-Cloud-Security-Token' },
    sessionToken: 'tok',
  });
  const signed = cloud.sign({ method: 'GET', path: '/', query: [], headers: [HOST], payload: null }, WHEN);
  assert.equal(signed.signedHeaders, 'host;x-cloud-date;x-cloud-security-token');
  assert.match(signed.canonicalRequest, /\nx-cloud-date:20150830T123600Z\nx-cloud-security-token:tok\n/);
  assert.deepEqual(signed.headers.slice(0, 4), [
    'x-cloud-date',
    '20150830T123600Z',
    'x-cloud-security-token',
    'tok',
  ]);
  // Same inputs under the provider's own names sign differently: the names are covered.
  const amz = new SigV4Signer({ ...SUITE, headerNames: AMZ, sessionToken: 'tok' });
  const other = amz.sign({ method: 'GET', path: '/', query: [], headers: [HOST], payload: null }, WHEN);
  assert.notEqual(signed.signature, other.signature);
});

test('sigv4: the cached signing key follows the day', () => {
  const signer = new SigV4Signer({ ...SUITE, headerNames: AMZ });
  const request = { method: 'GET', path: '/', query: [], headers: [HOST], payload: null };
  const first = signer.sign(request, WHEN);
  const nextDay = signer.sign(request, new Date(Date.UTC(2015, 7, 31, 12, 36, 0)));
  const fresh = new SigV4Signer({ ...SUITE, headerNames: AMZ }).sign(
    request,
    new Date(Date.UTC(2015, 7, 31, 12, 36, 0)),
  );
  assert.equal(signer.sign(request, WHEN).signature, first.signature);
  assert.equal(nextDay.signature, fresh.signature);
  assert.notEqual(nextDay.signature, first.signature);
});

test('sigv4: header values are trimmed with inner spaces collapsed; repeated names join with commas', () => {
  const signer = new SigV4Signer({ ...SUITE, headerNames: AMZ });
  const signed = signer.sign(
    {
      method: 'GET',
      path: '/',
      query: [],
      headers: [HOST, ['My-Header1', '  a   b   c  '], ['my-header2', 'v2'], ['My-Header2', 'v1']],
      payload: null,
    },
    WHEN,
  );
  assert.match(signed.canonicalRequest, /\nmy-header1:a b c\nmy-header2:v2,v1\n/);
  assert.equal(signed.signedHeaders, 'host;my-header1;my-header2;x-amz-date');
});

test('sigv4: canonical query encodes per RFC 3986 and sorts by name then value', () => {
  assert.equal(
    canonicalQueryString([
      ['b', '2'],
      ['a', 'hello world'],
      ['a', 'x+y/z'],
      ['a', 'A'],
      ['~k', "!'()*"],
    ]),
    'a=A&a=hello%20world&a=x%2By%2Fz&b=2&~k=%21%27%28%29%2A',
  );
  assert.equal(canonicalQueryString([]), '');
});

test('sigv4: signing date is ISO 8601 basic format in UTC', () => {
  assert.equal(formatSigningDate(WHEN), '20150830T123600Z');
  assert.equal(formatSigningDate(new Date(Date.UTC(2024, 0, 2, 3, 4, 5, 678))), '20240102T030405Z');
});
