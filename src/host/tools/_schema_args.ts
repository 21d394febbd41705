/**
 * A tool handler's argument type, from the tool's input schema (`z.infer`): what the SDK has
 * checked the arguments against is what the handler may assume. The SDK's own inference fails
 * under this TypeScript, so handlers spell it out with this.
 */
import type { z } from "zod";

export type SchemaArgs<Shape extends z.ZodRawShape> = z.infer<z.ZodObject<Shape>>;
