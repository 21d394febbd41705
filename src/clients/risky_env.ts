/**
 * Env keys that change what an entry runs whatever its command line says (pure): the code a
 * program loads first, which program a name finds, where packages are downloaded from and which
 * certificates are trusted. Matched case-insensitively, as Windows reads env names. Their
 * values are settings, not secrets: they are shown with the warning.
 */

const RISKS: { why: string; keys: RegExp[] }[] = [
  {
    why: "changes how the program loads code: it can run code other than the command shown",
    keys: [
      /^NODE_OPTIONS$/,
      /^NODE_PATH$/,
      /^LD_PRELOAD$/,
      /^LD_LIBRARY_PATH$/,
      /^LD_AUDIT$/,
      /^DYLD_/,
      /^PYTHONPATH$/,
      /^PYTHONSTARTUP$/,
      /^PYTHONHOME$/,
      /^BASH_ENV$/,
      /^JAVA_TOOL_OPTIONS$/,
      /^PERL5OPT$/,
      /^PERL5LIB$/,
      /^RUBYOPT$/,
      /^RUBYLIB$/,
    ],
  },
  {
    why: "changes which programs run: a name such as node or npx can find the project's own " +
      "(npx's #!/usr/bin/env node runs the first node on PATH), or their settings files",
    keys: [/^PATH$/, /^HOME$/, /^GIT_/],
  },
  {
    why: "changes where packages are downloaded from, through which proxy, or which " +
      "certificates are trusted: what runs can be someone else's code",
    keys: [
      /_PROXY$/,
      /^NO_PROXY$/,
      /^NODE_TLS_REJECT_UNAUTHORIZED$/,
      /^NODE_EXTRA_CA_CERTS$/,
      /^SSL_CERT_/,
      /^REQUESTS_CA_BUNDLE$/,
      /^UV_/,
      /^PIP_/,
      /^NPM_CONFIG_/,
      /^DENO_/,
    ],
  },
];

/** Why `key` in an entry's env changes what runs (a sentence after "env KEY=value"), or null. */
export function envRisk(key: string): string | null {
  const upper = key.toUpperCase();
  return RISKS.find((risk) => risk.keys.some((pattern) => pattern.test(upper)))?.why ?? null;
}
