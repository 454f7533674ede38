"""The capability catalogue, the named partner types and the vector syntax."""

import numpy as np
import pytest
import yaml

from cecm_ros.core.capabilities import CapabilityCatalog
from cecm_ros.core.errors import CecmError, ConfigError, UnknownNameError
from cecm_ros.core.resources import config_path
from cecm_ros.domains.tidyup.model import DEFAULT_CAPABILITIES, default_catalog

ROOMS = ('kitchen', 'living_room', 'bedroom', 'study', 'bathroom')
SKILLS = ('move', 'pick', 'place', 'wash')
EXPECTED_NAMES = tuple(f'{skill}_{room}' for skill in SKILLS for room in ROOMS)


@pytest.fixture(scope='module')
def catalog():
    return default_catalog()


def zeros(catalog, vector):
    return {catalog.names[i] for i in np.flatnonzero(~vector)}


def test_twenty_capabilities_in_config_order(catalog):
    assert len(catalog) == 20
    assert catalog.names == EXPECTED_NAMES
    # The order is the order of the YAML file, not some sorted order.
    listed = yaml.safe_load(config_path(DEFAULT_CAPABILITIES).read_text())['capabilities']
    assert catalog.names == tuple(entry['name'] for entry in listed)
    for index, name in enumerate(EXPECTED_NAMES):
        capability = catalog.capabilities[index]
        assert catalog.index(name) == index
        assert f'{capability.action}_{capability.room}' == name
        assert catalog.gate_index(capability.action, capability.room) == index


def test_gate_index_is_none_for_ungated_pairs(catalog):
    assert catalog.gate_index('move', 'garage') is None
    assert catalog.gate_index('fly', 'kitchen') is None


def test_high_capability_lacks_only_placing_in_bedroom_and_living_room(catalog):
    vector = catalog.partner_vector('high_capability')
    assert vector.dtype == bool and vector.shape == (20,)
    assert zeros(catalog, vector) == {'place_bedroom', 'place_living_room'}


def test_low_capability_moves_everywhere_but_handles_only_bathroom_and_kitchen(catalog):
    vector = catalog.partner_vector('low_capability')
    expected = {f'{skill}_{room}' for skill in ('pick', 'place', 'wash')
                for room in ('living_room', 'bedroom', 'study')}
    assert zeros(catalog, vector) == expected
    assert len(expected) == 9
    for room in ROOMS:
        assert vector[catalog.index(f'move_{room}')]


def test_full_capability_and_all_capable_are_all_ones(catalog):
    assert catalog.partner_vector('full_capability').all()
    assert catalog.all_capable().all() and len(catalog.all_capable()) == 20


def test_parse_vector_assignments_apply_over_all_ones(catalog):
    vector = catalog.parse_vector('pick_kitchen=0, wash_bathroom=0,move_study=1')
    assert zeros(catalog, vector) == {'pick_kitchen', 'wash_bathroom'}
    assert catalog.parse_vector('').all()
    assert catalog.parse_vector('pick_kitchen=0,,').sum() == 19
    # A later assignment of the same name wins.
    assert catalog.parse_vector('pick_kitchen=0,pick_kitchen=1').all()


def test_parse_vector_bit_string(catalog):
    bits = '01' * 10
    vector = catalog.parse_vector(bits)
    assert vector.tolist() == [ch == '1' for ch in bits]
    assert zeros(catalog, vector) == set(EXPECTED_NAMES[0::2])
    assert catalog.parse_vector('1' * 20).all()
    assert not catalog.parse_vector('0' * 20).any()


def test_parse_vector_unknown_capability_is_named(catalog):
    with pytest.raises(UnknownNameError, match='fly_kitchen') as error:
        catalog.parse_vector('pick_kitchen=0,fly_kitchen=0')
    assert 'move_kitchen' in str(error.value)  # lists what is known


@pytest.mark.parametrize('text', ['pick_kitchen=2', 'pick_kitchen', 'pick_kitchen=',
                                  'pick_kitchen=yes'])
def test_parse_vector_malformed_assignment(catalog, text):
    with pytest.raises(ConfigError, match='malformed capability assignment') as error:
        catalog.parse_vector(text)
    assert 'pick_kitchen' in str(error.value)


@pytest.mark.parametrize('bits', ['1' * 19, '1' * 21, '0', '10'])
def test_parse_vector_bit_string_of_wrong_length(catalog, bits):
    with pytest.raises(ConfigError, match=rf'has {len(bits)} digits, expected 20'):
        catalog.parse_vector(bits)


def test_unknown_partner_type_is_named_with_the_known_ones(catalog):
    with pytest.raises(UnknownNameError, match='medium_capability') as error:
        catalog.partner_vector('medium_capability')
    assert 'low_capability' in str(error.value) and 'high_capability' in str(error.value)
    with pytest.raises(UnknownNameError, match='medium_capability'):
        catalog.resolve('medium_capability')


def test_resolve_accepts_partner_types_assignments_and_bits(catalog):
    np.testing.assert_array_equal(catalog.resolve('low_capability'),
                                  catalog.partner_vector('low_capability'))
    assert zeros(catalog, catalog.resolve('wash_kitchen=0')) == {'wash_kitchen'}
    assert not catalog.resolve('0' * 20).any()


def test_format_vector_lists_the_zeros_in_catalogue_order(catalog):
    vector = catalog.vector_without(['wash_study', 'move_kitchen'])
    assert catalog.format_vector(vector) == 'move_kitchen=0,wash_study=0'
    assert catalog.format_vector(catalog.all_capable()) == 'all'


@pytest.mark.parametrize('seed', range(5))
def test_format_vector_round_trips_through_parse_vector(catalog, seed):
    rng = np.random.default_rng(seed)
    vector = rng.random(len(catalog)) < 0.7
    vector[seed] = False  # at least one zero
    text = catalog.format_vector(vector)
    np.testing.assert_array_equal(catalog.parse_vector(text), vector)
    np.testing.assert_array_equal(catalog.resolve(text), vector)


@pytest.mark.parametrize('partner', ['high_capability', 'low_capability'])
def test_format_vector_round_trips_partner_types(catalog, partner):
    vector = catalog.partner_vector(partner)
    np.testing.assert_array_equal(catalog.parse_vector(catalog.format_vector(vector)), vector)


def test_format_vector_round_trips_the_all_ones_vector(catalog):
    vector = catalog.all_capable()
    text = catalog.format_vector(vector)
    np.testing.assert_array_equal(catalog.resolve(text), vector)


def test_check_vector_accepts_ints_and_rejects_bad_shapes_or_values(catalog):
    as_ints = [1] * 19 + [0]
    checked = catalog.check_vector(as_ints)
    assert checked.dtype == bool and zeros(catalog, checked) == {'wash_bathroom'}
    with pytest.raises(ConfigError, match=r'shape \(19,\), expected \(20,\)'):
        catalog.check_vector([1] * 19)
    with pytest.raises(ConfigError, match='0 or 1'):
        catalog.check_vector([2] * 20)


def test_catalog_file_errors(tmp_path):
    with pytest.raises(ConfigError, match='cannot read capability file'):
        CapabilityCatalog.from_yaml(tmp_path / 'missing.yaml')
    bad_partner = tmp_path / 'bad_partner.yaml'
    bad_partner.write_text(yaml.safe_dump({
        'capabilities': [{'name': 'move_kitchen', 'action': 'move', 'room': 'kitchen'}],
        'partner_types': {'clumsy': {'missing': ['juggle_kitchen']}}}))
    with pytest.raises(UnknownNameError, match='juggle_kitchen'):
        CapabilityCatalog.from_yaml(bad_partner)
    no_room = tmp_path / 'no_room.yaml'
    no_room.write_text(yaml.safe_dump({'capabilities': [{'name': 'x', 'action': 'move'}]}))
    with pytest.raises(ConfigError, match='needs name, action and room'):
        CapabilityCatalog.from_yaml(no_room)
    duplicate = tmp_path / 'duplicate.yaml'
    entry = {'name': 'move_kitchen', 'action': 'move', 'room': 'kitchen'}
    duplicate.write_text(yaml.safe_dump({'capabilities': [entry, entry]}))
    with pytest.raises(ConfigError, match='named more than once') as caught:
        CapabilityCatalog.from_yaml(duplicate)
    # The duplicate is named, not every capability.
    assert str(caught.value).endswith("capability 'move_kitchen' is named more than once")
    assert issubclass(ConfigError, CecmError) and issubclass(UnknownNameError, CecmError)


def test_messages_say_what_a_vector_lacks(catalog):
    assert catalog.describe_missing(catalog.all_capable()) == 'nothing'
    high = catalog.partner_vector('high_capability')
    assert catalog.describe_missing(high) == 'place_living_room, place_bedroom'
