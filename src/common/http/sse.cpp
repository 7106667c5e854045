// Filled in by the HTTP work; see include/omni/http/.
