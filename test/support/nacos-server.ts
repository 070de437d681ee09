import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** One registered instance, as Nacos describes it. */
export interface NacosInstance {
  ip: string;
  port: number;
  weight?: number;
  healthy: boolean;
  enabled?: boolean;
}

export interface NacosServer {
  /** `http://127.0.0.1:<port>`, for `address:`. */
  readonly url: string;
  /** Query strings of the instance-list requests so far. */
  readonly queries: URLSearchParams[];
  register(service: string, instance: NacosInstance, group?: string): void;
  deregister(service: string, ip: string, port: number, group?: string): void;
  update(service: string, ip: string, port: number, change: Partial<NacosInstance>, group?: string): void;
  close(): Promise<void>;
}

/**
 * The read side of Nacos's open API (nacos.io, Open API: "Query instance list"):
 * `GET /nacos/v1/ns/instance/list?serviceName=…&groupName=…&namespaceId=…&healthyOnly=…`
 * answers `{name: "<group>@@<service>", hosts: [{ip, port, weight, healthy, enabled, …}], …}`;
 * `healthyOnly=true` leaves unhealthy hosts out; an unknown service has no hosts. `groupName`
 * defaults to DEFAULT_GROUP and `namespaceId` to the public namespace.
 */
export async function startNacosServer(): Promise<NacosServer> {
  const services = new Map<string, NacosInstance[]>();
  const queries: URLSearchParams[] = [];
  const sockets = new Set<Socket>();
  const key = (service: string, group = 'DEFAULT_GROUP', namespace = 'public') =>
    `${namespace}/${group}@@${service}`;
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://nacos');
    if (req.method !== 'GET' || url.pathname !== '/nacos/v1/ns/instance/list') {
      res.writeHead(404).end();
      return;
    }
    queries.push(url.searchParams);
    const name = url.searchParams.get('serviceName');
    if (name === null || name === '') {
      res.writeHead(400, { 'content-type': 'text/plain' }).end("caused: Param 'serviceName' is required.;");
      return;
    }
    const group = url.searchParams.get('groupName') ?? 'DEFAULT_GROUP';
    const namespace = url.searchParams.get('namespaceId') ?? 'public';
    const healthyOnly = url.searchParams.get('healthyOnly') === 'true';
    const hosts = (services.get(key(name, group, namespace)) ?? [])
      .filter((h) => !healthyOnly || h.healthy)
      .map((h) => ({
        instanceId: `${h.ip}#${h.port}#DEFAULT#${group}@@${name}`,
        ip: h.ip,
        port: h.port,
        weight: h.weight ?? 1.0,
        healthy: h.healthy,
        enabled: h.enabled ?? true,
        ephemeral: true,
        clusterName: 'DEFAULT',
        serviceName: `${group}@@${name}`,
        metadata: {},
        instanceHeartBeatInterval: 5000,
        instanceHeartBeatTimeOut: 15000,
        ipDeleteTimeout: 30000,
      }));
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        name: `${group}@@${name}`,
        groupName: group,
        clusters: '',
        cacheMillis: 10000,
        hosts,
        lastRefTime: Date.now(),
        checksum: '',
        allIPs: false,
        reachProtectionThreshold: false,
        valid: true,
      }),
    );
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  const list = (service: string, group?: string) => {
    const k = key(service, group);
    let hosts = services.get(k);
    if (hosts === undefined) services.set(k, (hosts = []));
    return hosts;
  };
  return {
    url: `http://127.0.0.1:${port}`,
    queries,
    register(service, instance, group) {
      const hosts = list(service, group);
      const at = hosts.findIndex((h) => h.ip === instance.ip && h.port === instance.port);
      if (at === -1) hosts.push({ ...instance });
      else hosts[at] = { ...instance };
    },
    deregister(service, ip, p, group) {
      const hosts = list(service, group);
      const at = hosts.findIndex((h) => h.ip === ip && h.port === p);
      if (at !== -1) hosts.splice(at, 1);
    },
    update(service, ip, p, change, group) {
      const host = list(service, group).find((h) => h.ip === ip && h.port === p);
      if (host === undefined) throw new Error(`no instance ${ip}:${p} of ${service}`);
      Object.assign(host, change);
    },
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}
