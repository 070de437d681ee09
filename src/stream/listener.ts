import type { Socket as UdpSocket } from 'node:dgram';
import type { AddressInfo, Server } from 'node:net';
import type { StreamListenerConfig } from '../config/system.js';

/** A running stream (L4) listener. */
export interface StreamListener {
  readonly protocol: 'tcp' | 'udp';
  /** `tcp 0.0.0.0:5432`, as configured: the metrics label and log field. */
  readonly label: string;
  readonly address: AddressInfo;
  /** Counters since start, read when metrics are scraped. */
  readonly counts: StreamCounts;
  /** Client connections (TCP) or datagram sessions (UDP) open now. */
  open(): number;
  /**
   * Takes new settings for later connections (pools, SNI routes) while open ones carry on; false
   * when they cannot be applied in place (TLS settings) and the listener must be rebound.
   */
  update(config: StreamListenerConfig): boolean;
  /** Stops accepting; open connections or sessions get `graceMs` to finish, then are cut. */
  close(graceMs: number): Promise<void>;
}

export interface StreamCounts {
  /** TCP connections accepted, or UDP sessions opened. */
  accepted: number;
  /** TCP connect attempts that failed, or UDP sessions ended by an error. */
  failures: number;
}

/** Binds a TCP server, rejecting with an error that names the listener (fail-fast at startup). */
export function listenOn(server: Server, bind: string, port: number, label: string): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) =>
      reject(new Error(`${label}: cannot listen: ${err.message}`));
    server.once('error', onError);
    server.listen(port, bind, () => {
      server.off('error', onError);
      resolve(server.address() as AddressInfo);
    });
  });
}

/** Binds a UDP socket, with the same failure shape as {@link listenOn}. */
export function bindOn(socket: UdpSocket, bind: string, port: number, label: string): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) =>
      reject(new Error(`${label}: cannot listen: ${err.message}`));
    socket.once('error', onError);
    socket.bind(port, bind, () => {
      socket.off('error', onError);
      resolve(socket.address());
    });
  });
}
