/**
 * Stage: request checks. Everything the host can decide about a request before any sandbox is
 * touched: the profile (known, and one callers may use), the code's size, the timeout, the input
 * files and the Python packages (resolved to files, dependencies included). A request that passes becomes a `CheckedRequest`
 * the later stages trust; one that does not becomes a `Refusal`.
 */
import { checkCodeSize } from "../policy/code_size.ts";
import { checkInputFiles } from "../policy/input_files.ts";
import type { PackageSources } from "../packages/package_sources.ts";
import type { ResolvedPackage } from "../packages/package_sources.ts";
import { requirementName, scriptDependencies } from "../packages/wheels.ts";
import type { InputFile } from "../rpc/sandbox_protocol.ts";
import type { Profile } from "../sandbox/profile.ts";
import type { ExecuteRequest } from "./executor.ts";
import type { HostOutcome } from "./outcomes.ts";

/** Packages one execution may name, in `packages` and its PEP 723 block together. */
export const MAX_PACKAGE_NAMES = 20;
export interface CheckedRequest {
  code: string;
  profile: Profile;
  timeoutMs: number;
  files: InputFile[];
  /** Python package files to install, dependencies first. */
  pythonPackages: ResolvedPackage[];
  /** Run in this persistent session instead of a fresh sandbox. */
  sessionId?: string;
}

/** The host refused a request, before or instead of running it. */
export interface Refusal {
  /** The profile asked for (it may not exist). */
  profile: string;
  outcome: HostOutcome;
  message: string;
}

export interface RequestCheckDeps {
  /** A profile callers may use, by name; undefined when unknown or not allowed. */
  profile: (name: string) => Profile | undefined;
  /** Why a profile callers may name cannot be used now (see loadProfiles), if it cannot. */
  unavailableProfile?: (name: string) => string | undefined;
  defaultProfile: string;
  /** Where requested Python packages come from (absent: none can be installed). */
  packages?: PackageSources;
}

export async function checkRequest(
  request: ExecuteRequest,
  deps: RequestCheckDeps,
  /** Runs under this profile instead of a named one (internal callers only, never clients). */
  profileOverride?: Profile,
  /** The client gave up: packages being resolved are no longer waited for. */
  signal?: AbortSignal,
): Promise<CheckedRequest | Refusal> {
  const name = request.profile ?? deps.defaultProfile;
  const refuse = (outcome: HostOutcome, message: string): Refusal => ({
    profile: name,
    outcome,
    message,
  });
  const profile = profileOverride ?? deps.profile(name);
  const unavailable = profile === undefined ? deps.unavailableProfile?.(name) : undefined;
  if (unavailable) {
    return refuse("POLICY_VIOLATION", `Profile "${name}" is unavailable: ${unavailable}`);
  }
  if (profile === undefined) {
    return refuse(
      "POLICY_VIOLATION",
      `Profile "${name}" does not exist or may not be used by callers`,
    );
  }
  const tooBig = checkCodeSize(request.code, profile.limits);
  if (tooBig) return refuse("POLICY_VIOLATION", tooBig);
  const timeoutS = request.timeout_s ?? profile.limits.timeout_s;
  if (!(timeoutS > 0) || timeoutS > profile.limits.max_timeout_s) {
    return refuse(
      "POLICY_VIOLATION",
      `timeout_s must be above 0 and at most ${profile.limits.max_timeout_s}`,
    );
  }
  const files = checkInputFiles(request.files ?? {});
  if (typeof files === "string") return refuse("POLICY_VIOLATION", files);

  // Named as a PEP 723 block names them ("pandas>=2"): the version is not evaluated.
  const named = (request.packages ?? []).map(requirementName);
  const wanted = [...new Set([...named, ...scriptDependencies(request.code)])];
  if (wanted.length > MAX_PACKAGE_NAMES) {
    return refuse(
      "PACKAGE_UNAVAILABLE",
      `Cannot install packages: at most ${MAX_PACKAGE_NAMES} may be named (in packages and the ` +
        `script's PEP 723 block together), got ${wanted.length}`,
    );
  }
  let pythonPackages: ResolvedPackage[] = [];
  if (wanted.length > 0) {
    const found = deps.packages
      ? await deps.packages.resolve(wanted, profile.net, undefined, signal)
      : { packages: [], problems: [`${wanted.join(", ")}: no package sources`] };
    if (signal?.aborted) {
      return refuse(
        "CANCELLED",
        "Execution was cancelled by the client while its packages were resolved",
      );
    }
    if (found.problems.length > 0) {
      const hosts = found.problems.some((p) => /does not allow the (package index )?host/.test(p))
        ? ` (the hosts a profile allows are its "net" list, in permissions/${profile.name}.json ` +
          "or the settings' permissions_dir; the profile's scripts may then reach them too)"
        : "";
      return refuse(
        "PACKAGE_UNAVAILABLE",
        `Cannot install packages: ${found.problems.join("; ")}${hosts}`,
      );
    }
    // Within what one execution may install: resolution refuses past RESOLVE_LIMITS.
    pythonPackages = found.packages;
  }
  return {
    code: request.code,
    profile,
    timeoutMs: timeoutS * 1000,
    files,
    pythonPackages,
    sessionId: request.session_id,
  };
}

export function isRefusal(value: CheckedRequest | Refusal): value is Refusal {
  return "outcome" in value;
}
