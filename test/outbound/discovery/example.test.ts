/**
 * Issue 35 "examples that run": examples/service-discovery as its comments say to run it: dnsmasq
 * with the example's dnsmasq.conf, the stand-in backend, the gateway with the example's
 * gateway.yaml. Only the ports differ (this run's free ones, for the DNS server and for the
 * backend's two ports in the SRV records). Both SRV targets answer through the one upstream.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dnsmasqSkip } from '../../support/dnsmasq.js';
import { freePort } from '../../support/free-port.js';
import { spawnGateway } from '../../support/gateway-process.js';
import { tempDir } from '../../support/temp-dir.js';
import { waitFor } from '../../support/wait.js';

const repo = fileURLToPath(new URL('../../../', import.meta.url));
const example = join(repo, 'examples', 'service-discovery');

test(
  'examples/service-discovery runs as written: SRV records pick the backends',
  { skip: dnsmasqSkip() },
  async () => {
    const dir = tempDir('switchyard-discovery-example-');
    const [dnsPort, portA, portB, gatewayPort] = [
      await freePort(),
      await freePort(),
      await freePort(),
      await freePort(),
    ];
    const conf = readFileSync(join(example, 'dnsmasq.conf'), 'utf8')
      .replace(/^port=5353$/m, `port=${dnsPort}`)
      .replace(/,9801,/g, `,${portA},`)
      .replace(/,9802,/g, `,${portB},`);
    assert.ok(conf.includes(`,${portA},10,3`) && conf.includes(`,${portB},10,1`));
    const confPath = join(dir.path, 'dnsmasq.conf');
    writeFileSync(confPath, conf);
    // Not as a daemon, no pid file, not dropping to nobody: a test process, not a system service.
    const dns = spawn('dnsmasq', ['--no-daemon', `--conf-file=${confPath}`, '--pid-file=', '--user='], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    const backend = spawn(process.execPath, [join(repo, 'examples', 'backend', 'server.mjs')], {
      env: { ...process.env, BACKEND_PORTS: `${portA},${portB}` },
      stdio: 'ignore',
    });
    const gw = spawnGateway(['--gateway-config', join(example, 'gateway.yaml')], {
      GATEWAY_PORT: String(gatewayPort),
      GATEWAY_BIND: '127.0.0.1',
      ADMIN_PORT: String(await freePort()),
      DNS_RESOLVER: `127.0.0.1:${dnsPort}`,
      LOG_LEVEL: 'warn',
    });
    try {
      const seen = new Set<number>();
      await waitFor(
        async () => {
          const res = await fetch(`http://127.0.0.1:${gatewayPort}/api/hi`).catch(() => undefined);
          if (res?.status === 200) seen.add((JSON.parse(await res.text()) as { backend: number }).backend);
          else await res?.text();
          return seen.size === 2;
        },
        { timeoutMs: 60_000, intervalMs: 50, what: `both SRV targets to answer (seen ${[...seen].join()})` },
      );
      assert.deepEqual([...seen].sort(), [portA, portB].sort());
    } finally {
      const code = await gw.stop('SIGTERM');
      backend.kill();
      dns.kill();
      for (const child of [backend, dns])
        if (child.exitCode === null && child.signalCode === null) await once(child, 'exit');
      dir.remove();
      assert.equal(code, 0, gw.output());
    }
  },
);
