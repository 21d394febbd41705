/**
 * Values that command-line args hold under a flag whose name says it is a secret (pure):
 * `--token=V` (the part after `=`), `--password:V`, `GITHUB_TOKEN=V` (a setting given to
 * `-e` or `--env`) and `--api-key V` (the next arg, unless it is a flag too).
 * A flag's name is read with `-` as `_` (`api-key` as `api_key`). The server scrubs these
 * values (config.ts); import hides them when it prints an entry (clients/secrets.ts).
 */

export interface SecretFlagValue {
  /** The arg holding the value. */
  index: number;
  /** What comes before the value in that arg: `--token=`, or "" when the value is the arg. */
  prefix: string;
  value: string;
}

/**
 * A flag with its value: `--token=X`, `-p=X`, `--password:X`, `-Dssl.keyStorePassword=X`; a
 * setting: `API_KEY=X`.
 */
const FLAG_WITH_VALUE = /^(--?([A-Za-z][A-Za-z0-9_.-]*)[=:]|([A-Za-z_][A-Za-z0-9_]*)=)(.*)$/s;
/** A flag alone, whose value is the next arg: `--api-key X`. */
const FLAG = /^--?([A-Za-z][A-Za-z0-9_-]*)$/;

export function secretFlagValues(
  args: readonly string[],
  isSecretName: (name: string) => boolean,
): SecretFlagValue[] {
  const isSecretFlag = (name: string) => isSecretName(name.replaceAll("-", "_"));
  const found: SecretFlagValue[] = [];
  args.forEach((arg, index) => {
    const withValue = FLAG_WITH_VALUE.exec(arg);
    if (withValue) {
      const [, prefix, flagName, settingName, value] = withValue as unknown as string[];
      // `--keyfile:C:/keys/a.pem` names a file; `API_KEY=V node s.js` is a command line, whose
      // words the caller reads one by one.
      const aFile = prefix!.endsWith(":") && /[/\\]/.test(value!);
      const aCommand = settingName !== undefined && /\s/.test(value!);
      if (!aFile && !aCommand && isSecretFlag(flagName ?? settingName!)) {
        found.push({ index, prefix: prefix!, value: value! });
        return;
      }
    }
    const flag = index > 0 ? FLAG.exec(args[index - 1]!) : null;
    if (flag && isSecretFlag(flag[1]!) && !arg.startsWith("-")) {
      found.push({ index, prefix: "", value: arg });
    }
  });
  return found;
}
