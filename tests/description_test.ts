/**
 * The execute_code description says which tools its profile lets a script call: the index below
 * it lists every tool, and an agent otherwise learns of a refusal only when a call raises.
 */
import assert from "node:assert/strict";
import { describeExecuteCode } from "../src/host/description.ts";
import { plainProfile } from "./_profiles.ts";

Deno.test("the description names a profile's tool rules when they narrow anything", () => {
  const open = describeExecuteCode(plainProfile("default"), "memory: read_graph");
  assert.doesNotMatch(open, /Tool rules/);
  const narrowed = describeExecuteCode(
    {
      ...plainProfile("reader"),
      allowed_tools: ["filesystem.*", "memory.read_*"],
      approve: ["filesystem.write_*"],
    },
    "memory: read_graph, create_entities",
  );
  assert.match(
    narrowed,
    /^Tool rules \(profile "reader"\): only filesystem\.\*, memory\.read_\* may be called \(others raise ToolDenied\); filesystem\.write_\* wait for a person's approval\.$/m,
  );
  const approving = describeExecuteCode(
    { ...plainProfile("careful"), approve: ["*"] },
    "memory: read_graph",
  );
  assert.match(approving, /^Tool rules \(profile "careful"\): every tool may be called; \* wait/m);
});
