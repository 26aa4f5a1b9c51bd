/**
 * The adapters of the external-effect ports (lib/workflow/effects/): S3 for documents, SES v2 and
 * SMTP for emails, fetch for a provider with an Idempotency-Key. Kept apart from the workflow's
 * index so a function bundles only the clients it imports.
 */
export { S3ObjectStore, s3Client } from './s3-store.js';
export { classifySesError, SesEmailProvider } from './ses-email.js';
export { classifySmtpError, SmtpEmailProvider } from './smtp-email.js';
export { destinationUrl, FetchHttpProvider } from './http-provider.js';
export { classifyHttp2xx, classifyHttpStatus, classifyNoAnswer, classifySes, classifySmtp, HTTP_MODEL, PROVIDER_MODELS, SES_MODEL, SMTP_MODEL, VERDICT_ACTIONS, type BehaviourRow, type ProviderModel } from './provider-behaviour.js';
export { signedFetch, type SignedFetchOptions } from './signed-fetch.js';
export { answerSandboxCall, SANDBOX_DECLINED_CARD, SANDBOX_ENV, sandboxBehaviourFromEnv, type SandboxAnswer, type SandboxBehaviour, type SandboxDeps, type SandboxRequest } from './sandbox-provider.js';
export { CredentialMissingError, SecretsManagerCredential, type Credential } from './secret-credential.js';
