// The certificates of one HTTPS Gateway port, from kubernetes.io/tls Secrets (docs/kubernetes.md).
// Handed to the port's TLS listener as its managed certificates (the same hook ACME uses, see
// ManagedCertificates in src/server/tls-material.ts): the listener's TLS material picks one by SNI
// (exact name, then a `*.` wildcard, else the default) and swaps them in on `onChange`, so a
// rotated Secret serves its new certificate from the next handshake without a restart.
import type { TlsCertificate } from './translate.js';

export class PortCertificates {
  /** The default pair: the first listener without a hostname, else the first listener. */
  #default: { cert: string; key: string };
  /** One entry per distinct listener hostname, in the order of `serverNames`. */
  #byName: { cert: string; key: string }[];
  readonly serverNames: string[];
  readonly #listeners = new Set<() => void>();

  constructor(certificates: TlsCertificate[]) {
    this.serverNames = PortCertificates.namesOf(certificates);
    [this.#default, this.#byName] = this.#split(certificates);
  }

  /** The distinct SNI names (listener hostnames) of a certificate list, in order. */
  static namesOf(certificates: TlsCertificate[]): string[] {
    return [
      ...new Set(certificates.flatMap((c) => (c.hostname === undefined ? [] : [c.hostname.toLowerCase()]))),
    ];
  }

  #split(certificates: TlsCertificate[]): [{ cert: string; key: string }, { cert: string; key: string }[]] {
    const first = certificates.find((c) => c.hostname === undefined) ?? certificates[0];
    if (first === undefined) throw new Error('an HTTPS port needs at least one certificate');
    const byName = this.serverNames.map(
      (name) => certificates.find((c) => c.hostname?.toLowerCase() === name) as TlsCertificate,
    );
    return [{ cert: first.cert, key: first.key }, byName.map((c) => ({ cert: c.cert, key: c.key }))];
  }

  /**
   * New certificates for the same server names: swapped in (the TLS material reloads on the
   * change signal). False when the names differ: the port's TLS listener must be rebuilt.
   */
  update(certificates: TlsCertificate[]): boolean {
    const names = PortCertificates.namesOf(certificates);
    if (names.join('\n') !== this.serverNames.join('\n')) return false;
    const [def, byName] = this.#split(certificates);
    const same = JSON.stringify([def, byName]) === JSON.stringify([this.#default, this.#byName]);
    this.#default = def;
    this.#byName = byName;
    if (!same) for (const l of this.#listeners) l();
    return true;
  }

  pair(slot: 'default' | number): { cert: string; key: string } {
    return slot === 'default' ? this.#default : (this.#byName[slot] ?? this.#default);
  }

  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** No ACME challenges are answered on a Gateway port. */
  challengeContext(): undefined {
    return undefined;
  }
}
