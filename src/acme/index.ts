export {
  AcmeManager,
  CERT_STATES,
  type AcmeSample,
  type CertView,
  type RenewAnswer,
  type CertState,
} from './manager.js';
export {
  acmeConfigIssues,
  acmeConfigOf,
  acmeStoreIssues,
  certIdOf,
  managedCerts,
  parseDuration,
  type AcmeConfig,
  type AcmeSlotRef,
} from '../config/acme.js';
