import { parse } from 'yaml';
import { parseYamlData } from '../../src/config/yaml-data.js';

/** A reading of a YAML text: the value, or the error message. */
export type Reading = { value: unknown } | { error: string };

function reading(read: (text: string) => unknown, text: string): Reading {
  try {
    return { value: read(text) };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

/** `yaml`'s parse, the reference the config reader must agree with. */
export const yamlReading = (text: string): Reading => reading(parse, text);

/** The gateway's config reader (src/config/yaml-data.ts). */
export const gatewayReading = (text: string): Reading => reading(parseYamlData, text);
