import assert from 'node:assert/strict';
import { isIP } from 'node:net';
import { test } from 'node:test';
import { ipVersion } from '../../src/runtime/ip-version.js';

// What config keys (debug.allowed_cidrs, ip conditions) and client addresses look like, valid and not.
const SAMPLES = [
  '127.0.0.1',
  '10.0.0.5',
  '255.255.255.255',
  '0.0.0.0',
  '256.1.1.1',
  '01.2.3.4',
  '1.2.3',
  '1.2.3.4.5',
  '::1',
  '::',
  '2001:db8::1',
  '2001:0db8:0000:0000:0000:ff00:0042:8329',
  '::ffff:127.0.0.1',
  'fe80::1%eth0',
  '1::2::3',
  '2001:db8::/32',
  '12345::1',
  ':::1',
  'g::1',
  '::1 ',
  ' 127.0.0.1',
  'localhost',
  'example.com',
  '',
  '1.2.3.4/8',
];

test('ipVersion gives the answer net.isIP gives for IPv4, IPv6 and non-addresses', () => {
  for (const text of SAMPLES) assert.equal(ipVersion(text), isIP(text), JSON.stringify(text));
});
