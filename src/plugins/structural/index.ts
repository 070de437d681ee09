import { client } from './client.js';
import { listener } from './listener.js';

/** The two ends every policy has: where a request enters and where the answer leaves. */
export const structuralPlugins = [listener, client] as const;
