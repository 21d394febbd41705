/**
 * What a client's entry for code mode leaves behind: a client starts its servers with a minimal
 * environment (HOME, PATH and a few others), so the variables the config reads through
 * `${NAME}`, and the proxy and CA variables set where `install` runs, are not there unless the
 * entry's `env` gives them. `install` names them; it does not copy their values (secrets).
 */
import { placeholderNames } from "../config/placeholders.ts";
import { NETWORK_VARIABLES } from "../upstream/network_env.ts";

export function variablesLeftBehind(
  configText: string,
  env: (name: string) => string | undefined,
  entryEnv: Record<string, string>,
): { config: string[]; network: string[] } {
  const given = (name: string) => Object.hasOwn(entryEnv, name);
  return {
    config: placeholderNames(configText, { required: true }).filter((name) => !given(name)),
    network: NETWORK_VARIABLES.filter((name) => env(name) && !given(name)),
  };
}

/** The note `install` prints for them, or null when nothing is left behind. */
export function leftBehindNote(left: { config: string[]; network: string[] }): string | null {
  const parts = [
    left.config.length > 0 ? `the config reads ${left.config.join(", ")}` : "",
    left.network.length > 0 ? `this shell sets ${left.network.join(", ")}` : "",
  ].filter(Boolean);
  if (parts.length === 0) return null;
  return `  note: ${parts.join(" and ")}; the client starts code mode with only a few of your ` +
    'variables, so add these to the entry\'s "env" (their values are not written here: they ' +
    "may be secrets)";
}
