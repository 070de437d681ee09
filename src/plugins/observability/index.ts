import { clickhouseLogger } from './clickhouse-logger.js';
import { datadog } from './datadog.js';
import { elasticsearchLogger } from './elasticsearch-logger.js';
import { errorLogLogger } from './error-log-logger.js';
import { fileLogger } from './file-logger.js';
import { googleCloudLogging } from './google-cloud-logging.js';
import { httpLogger } from './http-logger.js';
import { lago } from './lago.js';
import { logging } from './logging.js';
import { loggly } from './loggly.js';
import { lokiLogger } from './loki-logger.js';
import { opentelemetry } from './opentelemetry.js';
import { prometheus } from './prometheus.js';
import { skywalkingLogger } from './skywalking-logger.js';
import { skywalking } from './skywalking.js';
import { slsLogger } from './sls-logger.js';
import { splunkHecLogging } from './splunk-hec-logging.js';
import { syslog } from './syslog.js';
import { tcpLogger } from './tcp-logger.js';
import { tencentCloudCls } from './tencent-cloud-cls.js';
import { udpLogger } from './udp-logger.js';
import { zipkin } from './zipkin.js';

/** Loggers, metrics and tracers: all leave through `success` and never fail or delay the request. */
export const observabilityPlugins = [
  logging,
  httpLogger,
  tcpLogger,
  udpLogger,
  syslog,
  fileLogger,
  errorLogLogger,
  elasticsearchLogger,
  clickhouseLogger,
  lokiLogger,
  splunkHecLogging,
  datadog,
  loggly,
  googleCloudLogging,
  slsLogger,
  tencentCloudCls,
  skywalkingLogger,
  lago,
  prometheus,
  opentelemetry,
  zipkin,
  skywalking,
] as const;
