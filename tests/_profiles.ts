/** Profiles for in-process tests. */
import { DEFAULT_LIMITS, type Profile } from "../src/sandbox/profile.ts";

/** A profile with no folders and no hosts, every tool allowed, the default limits. */
export function plainProfile(name: string): Profile {
  return {
    name,
    description: "",
    folders: [],
    net: [],
    allowed_tools: ["*"],
    approve: [],
    limits: { ...DEFAULT_LIMITS },
  };
}
