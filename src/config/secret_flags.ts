/**
 * Values that command-line args hold under a flag whose name says it is a secret (pure):
 * `--token=V` (the part after `=`) and `--api-key V` (the next arg, unless it is a flag too).
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

/** A flag with its value: `--token=X`, `-p=X`. */
const FLAG_WITH_VALUE = /^(--?([A-Za-z][A-Za-z0-9_-]*)=)(.*)$/s;
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
    if (withValue && isSecretFlag(withValue[2]!)) {
      found.push({ index, prefix: withValue[1]!, value: withValue[3]! });
      return;
    }
    const flag = index > 0 ? FLAG.exec(args[index - 1]!) : null;
    if (flag && isSecretFlag(flag[1]!) && !arg.startsWith("-")) {
      found.push({ index, prefix: "", value: arg });
    }
  });
  return found;
}
