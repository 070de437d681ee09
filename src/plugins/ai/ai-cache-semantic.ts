/**
 * The semantic half of ai-cache: embeddings of a prompt from an OpenAI-compatible embeddings
 * endpoint (`POST <endpoint>/v1/embeddings`), and a bounded in-process index of the vectors of
 * stored answers searched by cosine similarity.
 */

export interface EmbeddingsTarget {
  endpoint: string;
  model: string;
  api_key?: string;
  timeout_ms: number;
}

/** Asks `target` for the embedding of `text`; rejects on any failure (a miss for the caller). */
export async function embed(target: EmbeddingsTarget, text: string): Promise<Float64Array> {
  const url = `${target.endpoint.replace(/\/+$/, '')}/v1/embeddings`;
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (target.api_key !== undefined) headers.authorization = `Bearer ${target.api_key}`;
  const res = await fetch(url, {
    method: 'POST',
    headers,
    body: JSON.stringify({ model: target.model, input: text }),
    signal: AbortSignal.timeout(target.timeout_ms),
  });
  if (!res.ok) {
    await res.body?.cancel();
    throw new Error(`the embeddings endpoint answered ${res.status}`);
  }
  const body = (await res.json()) as { data?: { embedding?: unknown }[] };
  const vector = body.data?.[0]?.embedding;
  if (!Array.isArray(vector) || vector.length === 0 || !vector.every((x) => typeof x === 'number'))
    throw new Error('the embeddings answer has no data[0].embedding of numbers');
  return unit(Float64Array.from(vector));
}

/** `v` scaled to length 1 (a zero vector stays zero): cosine similarity is then a dot product. */
function unit(v: Float64Array): Float64Array {
  let norm = 0;
  for (const x of v) norm += x * x;
  norm = Math.sqrt(norm);
  if (norm > 0) for (let i = 0; i < v.length; i++) v[i]! /= norm;
  return v;
}

function dot(a: Float64Array, b: Float64Array): number {
  if (a.length !== b.length) return -1;
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += a[i]! * b[i]!;
  return sum;
}

interface Indexed {
  vector: Float64Array;
  /** The exact-match key the answer is stored under. */
  key: string;
  /** Requests match only among those alike in everything but the messages (model, tools, params). */
  group: string;
  expiresAt: number;
}

/**
 * The vectors of stored answers, at most `maxEntries` (the oldest goes first), each expiring with
 * its entry's ttl. A linear scan: with a few thousand vectors this is well under a millisecond.
 */
export class SemanticIndex {
  readonly #entries = new Map<string, Indexed>();

  constructor(readonly maxEntries: number) {}

  add(key: string, group: string, vector: Float64Array, ttlSeconds: number): void {
    this.#entries.delete(key);
    this.#entries.set(key, { key, group, vector, expiresAt: Date.now() + ttlSeconds * 1000 });
    while (this.#entries.size > this.maxEntries) {
      const oldest = this.#entries.keys().next().value;
      if (oldest === undefined) break;
      this.#entries.delete(oldest);
    }
  }

  /** The key of the most similar live entry of `group` at or above `threshold`. */
  nearest(
    group: string,
    vector: Float64Array,
    threshold: number,
  ): { key: string; score: number } | undefined {
    const now = Date.now();
    let best: { key: string; score: number } | undefined;
    for (const [key, e] of this.#entries) {
      if (e.expiresAt <= now) {
        this.#entries.delete(key);
        continue;
      }
      if (e.group !== group) continue;
      const score = dot(vector, e.vector);
      if (score >= threshold && (best === undefined || score > best.score)) best = { key, score };
    }
    return best;
  }

  delete(key: string): void {
    this.#entries.delete(key);
  }

  clear(): void {
    this.#entries.clear();
  }

  get size(): number {
    return this.#entries.size;
  }
}
