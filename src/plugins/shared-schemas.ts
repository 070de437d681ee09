/** Schema fragments reused by several plugin definitions. */

/** A header list written as a map `{name: value}` or as `[{name, value}]`; scalars are stringified. */
export const headerListSchema = {
  anyOf: [
    { type: 'object', additionalProperties: { type: ['string', 'number', 'boolean'] } },
    {
      type: 'array',
      items: {
        type: 'object',
        required: ['name'],
        properties: { name: { type: 'string' }, value: { type: ['string', 'number', 'boolean'] } },
      },
    },
  ],
} as const;

export type HeaderListConfig =
  Record<string, string | number | boolean> | { name: string; value?: string | number | boolean }[];

/** Normalizes either header-list shape to `[lowercased name, value]` pairs, skipping blank names. */
export function headerPairs(list: HeaderListConfig | undefined): [string, string][] {
  if (list === undefined) return [];
  const entries = Array.isArray(list)
    ? list.map((h) => [h.name, h.value ?? ''] as const)
    : Object.entries(list);
  return entries
    .filter(([name]) => name.trim() !== '')
    .map(([name, value]) => [name.trim().toLowerCase(), String(value)]);
}
