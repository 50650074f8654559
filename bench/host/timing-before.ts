// The probe before the extension under test (see timing.ts).
import { probe } from "./timing.ts";
export default probe("before");
