"""Job protocols, one package each: a family of jobs computed together as batches and reported by a
section of its own. Each package registers its executor part (run/protocols.py's PROTOCOLS) and its
report section (report/protocol_sections.py's SECTIONS) when imported; both registries import every
package here when first read. They stand above run/ and report/ in the layers, as plugins do, so
those dispatch through the registries without naming any protocol.
"""
