import { Counter, Gauge, type Registry } from 'prom-client';
import type { StreamListener } from '../stream/listener.js';

/**
 * Metrics of the stream (L4) listeners, read from their own counters when
 * scraped, so relaying costs nothing extra: connections (or UDP sessions)
 * accepted, upstream failures, and what is open now, by listener
 * (`tcp 0.0.0.0:5432`).
 */
export function registerStreamMetrics(registry: Registry, listeners: () => readonly StreamListener[]): void {
  const registers = [registry];
  new Counter({
    name: 'gateway_stream_connections_total',
    help: 'Stream connections accepted (TCP) or datagram sessions opened (UDP), by listener.',
    labelNames: ['listener'],
    registers,
    collect() {
      this.reset();
      for (const l of listeners()) this.labels(l.label).inc(l.counts.accepted);
    },
  });
  new Counter({
    name: 'gateway_stream_upstream_failures_total',
    help: 'Stream upstream connect failures (TCP) or sessions ended by an error (UDP), by listener.',
    labelNames: ['listener'],
    registers,
    collect() {
      this.reset();
      for (const l of listeners()) this.labels(l.label).inc(l.counts.failures);
    },
  });
  new Gauge({
    name: 'gateway_stream_open',
    help: 'Stream connections (TCP) or datagram sessions (UDP) open now, by listener.',
    labelNames: ['listener'],
    registers,
    collect() {
      this.reset();
      for (const l of listeners()) this.labels(l.label).set(l.open());
    },
  });
}
