import { gunzipSync } from 'node:zlib';
import { gzip } from '../../../src/plugins/core/gzip.js';
import { compressionCases } from './compression-cases.js';

compressionCases(gzip, 'gzip', (body) => gunzipSync(body), { valid: 9, invalid: 10 });
