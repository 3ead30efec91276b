"""`tinyrustlm-release release`: the steps (`steps`), the bundle writer (`bundle`), the optional
conformance step (`conformance`) and the command line (`cli`)."""
