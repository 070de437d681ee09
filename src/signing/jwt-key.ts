import { createPublicKey, type KeyObject } from 'node:crypto';

export const JWT_ALGORITHMS = [
  'HS256',
  'HS384',
  'HS512',
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
] as const;

export type JwtAlgorithm = (typeof JWT_ALGORITHMS)[number];

/** The asymmetric ones: what a published JWKS can verify (`Ed25519` is the newer JOSE name for EdDSA over it). */
export const ASYMMETRIC_JWT_ALGORITHMS: readonly string[] = [
  ...JWT_ALGORITHMS.filter((algorithm) => !algorithm.startsWith('HS')),
  'Ed25519',
];

/** A key ready for `jwtVerify`, with the one algorithm it may verify. */
export interface VerificationKey {
  key: Uint8Array | KeyObject;
  algorithm: JwtAlgorithm;
}

export interface KeyMaterial {
  secret?: unknown;
  public_key?: unknown;
  algorithm?: unknown;
}

const EC_CURVES: Readonly<Record<string, JwtAlgorithm>> = {
  prime256v1: 'ES256',
  secp384r1: 'ES384',
  secp521r1: 'ES512',
};

/**
 * Builds the verification key of an inline config or a consumer credential:
 * HS* use `secret`; RS/PS/ES/EdDSA use a PEM `public_key`, and without an
 * `algorithm` the key type decides it. Throws an Error whose message says what
 * is wrong; the caller turns it into a ConfigError.
 */
export function verificationKey(material: KeyMaterial): VerificationKey {
  const { secret, public_key: pem, algorithm } = material;
  if (algorithm !== undefined && !JWT_ALGORITHMS.includes(algorithm as JwtAlgorithm)) {
    throw new Error(`algorithm ${JSON.stringify(algorithm)} is not supported (${JWT_ALGORITHMS.join(', ')})`);
  }
  const alg = algorithm as JwtAlgorithm | undefined;
  if (typeof secret === 'string' && typeof pem === 'string') {
    throw new Error("set either 'secret' (HS*) or 'public_key' (RS/PS/ES/EdDSA), not both");
  }
  if (typeof secret === 'string') {
    if (alg !== undefined && !alg.startsWith('HS')) {
      throw new Error(`algorithm ${alg} needs 'public_key'; 'secret' is for HS256/HS384/HS512`);
    }
    if (secret === '') throw new Error("'secret' is empty");
    return { key: new TextEncoder().encode(secret), algorithm: alg ?? 'HS256' };
  }
  if (typeof pem !== 'string') throw new Error("needs 'secret' or 'public_key'");
  if (alg?.startsWith('HS') === true) throw new Error(`algorithm ${alg} needs 'secret', not 'public_key'`);
  let key: KeyObject;
  try {
    key = createPublicKey(pem);
  } catch (err) {
    throw new Error(`'public_key' is not a PEM public key: ${(err as Error).message}`, { cause: err });
  }
  const fits = keyAlgorithms(key);
  if (fits.length === 0)
    throw new Error(`'public_key' of type ${key.asymmetricKeyType ?? '?'} is not usable for JWT`);
  if (alg === undefined) return { key, algorithm: fits[0]! };
  if (!fits.includes(alg)) {
    throw new Error(
      `'public_key' is a ${describe(key)} key; it cannot verify ${alg} (use ${fits.join(', ')})`,
    );
  }
  return { key, algorithm: alg };
}

/** The algorithms a public key can verify, the one inferred by default first. */
function keyAlgorithms(key: KeyObject): JwtAlgorithm[] {
  switch (key.asymmetricKeyType) {
    case 'rsa':
      return ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512'];
    case 'rsa-pss':
      return ['PS256', 'PS384', 'PS512'];
    case 'ec': {
      const alg = EC_CURVES[key.asymmetricKeyDetails?.namedCurve ?? ''];
      return alg === undefined ? [] : [alg];
    }
    case 'ed25519':
    case 'ed448':
      return ['EdDSA'];
    default:
      return [];
  }
}

function describe(key: KeyObject): string {
  const curve = key.asymmetricKeyDetails?.namedCurve;
  return curve === undefined
    ? (key.asymmetricKeyType ?? 'unknown')
    : `${key.asymmetricKeyType ?? 'ec'} ${curve}`;
}
